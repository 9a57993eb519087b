// When failed pushes (a 5xx, a timeout, a refused connection) are tried again: attempts double from
// webhooks.retryBaseMs and stop after webhooks.maxAttempts. Each attempt is recorded on the push's delivery (CONTRACT
// §9, kind `push`) by the caller; the waiting itself is an in-process timer (a restart leaves the delivery where it
// was, and deliveries.retry of a dead one starts a fresh round).
import type { PushOutcome } from './send';

export type PushState = 'delivered' | 'gone' | 'refused' | 'dead';

export interface PushAttempt {
  /** Sends once. */
  send(): Promise<PushOutcome>;
  /** Told after each attempt; `end` is set on the last one (no retry follows). */
  record(outcome: PushOutcome, attempt: number, end: PushState | null): Promise<void>;
}

export interface PushRetries {
  /** Runs the first attempt now and the rest later; resolves once the first attempt is recorded. */
  start(a: PushAttempt): Promise<void>;
  stop(): void;
  /** Attempts waiting for their next try. */
  waiting(): number;
}

export function inProcessRetries(o: { retryBaseMs: number; maxAttempts: number }, onError: (e: unknown) => void): PushRetries {
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const endOf = (r: PushOutcome): PushState | null => (r.ok ? 'delivered' : r.gone ? 'gone' : r.refused ? 'refused' : null);
  return {
    async start(a) {
      const attempt = async (n: number): Promise<void> => {
        const r = await a.send();
        const end = endOf(r) ?? (n >= o.maxAttempts ? 'dead' : null);
        await a.record(r, n, end);
        if (end || stopped) return;
        const t = setTimeout(() => {
          timers.delete(t);
          if (!stopped) attempt(n + 1).catch(onError);
        }, o.retryBaseMs * 2 ** (n - 1));
        t.unref?.();
        timers.add(t);
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
