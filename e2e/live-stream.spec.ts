// The room's live stream is opened by the server-rendered page as it is parsed, not after hydration, and the room's
// subscription adopts it: one connection, and what streams in shows up (lib/trpc/early-stream.ts).
import { expect, test } from './fixtures';

test('the page opens the live stream itself, once, and the room shows what streams in on it', async ({ room, page, freshSession }) => {
  // Who opened each of the session's streams: an inline script of the page (no src) or the bundle.
  await page.addInitScript(() => {
    const w = window as unknown as { __streams: Array<{ url: string; by: string }> };
    w.__streams = [];
    const ES = window.EventSource;
    window.EventSource = class extends ES {
      constructor(url: string | URL, init?: EventSourceInit) {
        super(url, init);
        const s = document.currentScript as HTMLScriptElement | null;
        w.__streams.push({ url: String(url), by: s ? (s.src ? 'bundle' : 'page') : 'bundle' });
      }
    };
  });
  await room.open(freshSession);
  await room.send('/sleep 300\n/reply streamed on the early stream');
  await expect(room.texts('assistant').filter({ hasText: 'streamed on the early stream' })).toHaveCount(1);
  const streams = await page.evaluate(() => (window as unknown as { __streams: Array<{ url: string; by: string }> }).__streams);
  const mine = streams.filter((s) => decodeURIComponent(s.url).includes(`"sessionKey":"${freshSession}"`));
  expect(mine).toEqual([{ url: expect.stringContaining('/api/trpc/events.onEvent?input='), by: 'page' }]);
});
