// Retries of failed pushes (a 5xx, a timeout, a refused connection): the seam where pushes become deliveries of kind
// `push` (CONTRACT §9). Until the deliveries record exists this is an in-process timer queue: attempts double from
// webhooks.retryBaseMs and stop, `dead`, after webhooks.maxAttempts; a restart forgets what was waiting.
import type { PushOutcome } from './send';

export interface PushAttempt {
  approvalId: string;
  endpoint: string;
  /** Sends once; the retry keeps calling it until it is ok, gone, refused or out of attempts. */
  send(): Promise<PushOutcome>;
}

export type PushState = 'delivered' | 'gone' | 'refused' | 'dead';

export interface PushRetries {
  /** Runs the first attempt now and the rest later; resolves with the first attempt's outcome. */
  start(a: PushAttempt, done: (state: PushState, attempts: number, last: PushOutcome) => void): Promise<PushOutcome>;
  stop(): void;
  /** Attempts waiting for their next try. */
  waiting(): number;
}

export function inProcessRetries(o: { retryBaseMs: number; maxAttempts: number }): PushRetries {
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const stateOf = (r: PushOutcome): PushState | null => (r.ok ? 'delivered' : r.gone ? 'gone' : r.refused ? 'refused' : null);
  return {
    async start(a, done) {
      const attempt = async (n: number): Promise<PushOutcome> => {
        const r = await a.send();
        const end = stateOf(r);
        if (end) done(end, n, r);
        else if (n >= o.maxAttempts || stopped) done('dead', n, r);
        else {
          const t = setTimeout(() => {
            timers.delete(t);
            if (!stopped) void attempt(n + 1);
          }, o.retryBaseMs * 2 ** (n - 1));
          t.unref?.();
          timers.add(t);
        }
        return r;
      };
      return attempt(1);
    },
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
    waiting: () => timers.size,
  };
}
