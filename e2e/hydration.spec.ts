// Live events that reach the room while its deferred parts (sidebar, transcript, panels) still hydrate wait for them.
import { expect, test, TOKEN } from './fixtures';
import { rpc } from './support/rpc';

test('events that arrive while the room hydrates show after it, without a hydration mismatch', async ({ room, page, request, freshSession }) => {
  test.setTimeout(120_000);
  // Rows for the transcript to hydrate.
  let runId = '';
  for (let i = 0; i < 15; i++) ({ runId } = await rpc<{ runId: string }>(request, TOKEN, 'agent', { sessionKey: freshSession, message: `row ${i}` }));
  await rpc(request, TOKEN, 'agent.wait', { runId });

  // A slow CPU stretches the room's start (its deferred parts hydrate in later, lowest-priority tasks) while the
  // session's events keep coming. An event folded into the query cache before a part hydrated made that part hydrate
  // with rows the server had not rendered: React's mismatch error #418 (the pairing spec's flake), caught by the fixture.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 6 });
  // Events keep coming until the room is live and a little after, in a bounded burst (an unbounded one buries a
  // throttled page). Two page loads, two chances for the race.
  let n = 0;
  try {
    for (let load = 0; load < 2; load++) {
      let live = false;
      const ticks = (async () => {
        for (let i = 0; i < 50 && !live; i++) {
          await rpc(request, TOKEN, 'agent', { sessionKey: freshSession, message: `tick ${n++}` });
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      try {
        await room.open(freshSession);
        await page.waitForTimeout(500);
      } finally {
        live = true;
        await ticks;
      }
    }
  } finally {
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  }
  // Every event held meanwhile is in: the last tick's reply shows.
  await expect(room.texts('assistant').filter({ hasText: new RegExp(`^echo: tick ${n - 1}$`) })).toHaveCount(1, { timeout: 30_000 });
});
