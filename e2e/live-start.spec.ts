// "Live" as soon as the room's stream starts: the subscription's start sets the status bar itself, in the very next
// React commit, not after a re-render of the whole room and an effect (lib/room/use-session-events.ts).
import { expect, test } from './fixtures';

test('the first React commit after the live stream starts shows it as live', async ({ room, page, freshSession }) => {
  // A React DevTools hook notes each commit with the status bar's state at that commit (the DOM is updated by then);
  // the session's EventSource notes the server's `connected` event, which starts the tRPC subscription (this listener
  // is added in the constructor, so it runs before the link's own).
  await page.addInitScript(() => {
    const w = window as unknown as { __log: string[]; __REACT_DEVTOOLS_GLOBAL_HOOK__: unknown };
    w.__log = [];
    const state = () => document.querySelector('[data-testid="status-bar"]')?.getAttribute('data-connection') ?? 'none';
    const renderers = new Map<number, unknown>();
    w.__REACT_DEVTOOLS_GLOBAL_HOOK__ = {
      renderers,
      supportsFiber: true,
      inject(r: unknown) {
        renderers.set(renderers.size + 1, r);
        return renderers.size;
      },
      onScheduleFiberRoot() {},
      onCommitFiberRoot() {
        w.__log.push(`commit:${state()}`);
      },
      onPostCommitFiberRoot() {},
      onCommitFiberUnmount() {},
      checkDCE() {},
    };
    const ES = window.EventSource;
    window.EventSource = class extends ES {
      constructor(url: string | URL, init?: EventSourceInit) {
        super(url, init);
        if (String(url).includes('events.onEvent')) this.addEventListener('connected', () => w.__log.push('started'));
      }
    };
  });
  await room.open(freshSession);
  const log = await page.evaluate(() => (window as unknown as { __log: string[] }).__log);
  const started = log.indexOf('started');
  expect(started, log.join(' ')).toBeGreaterThanOrEqual(0);
  // Before the stream started the bar was not live; the first commit after it is.
  expect(log.slice(0, started).filter((e) => e === 'commit:connected'), log.join(' ')).toEqual([]);
  expect(log.slice(started + 1).find((e) => e.startsWith('commit:')), log.join(' ')).toBe('commit:connected');
});
