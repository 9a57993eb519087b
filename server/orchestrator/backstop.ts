// The orphan sweep's backstop (PostgreSQL): a session this process holds whose unfinished runs nothing here drives
// (a run dropped when PostgreSQL went away, a load that failed, a message that met a release in flight) is taken
// in again, so no session stays owned but not driven.
import type { Cluster } from '../cluster/cluster';
import type { Logger } from '../logger';
import type { RunRow } from '../store/schema';
import type { Store } from '../store/store';
import type { AgentResult } from '../gateway/types';
import type { SessionState } from './queue';

export interface BackstopHost {
  cluster(): Cluster;
  /** The orchestrator's session states (the one map: a state deleted here is gone there). */
  sessions: Map<string, SessionState>;
  stopping(): boolean;
  store: Store;
  log: Logger;
  adopt(key: string, epoch: number): Promise<void>;
  placeStored(st: SessionState, row: RunRow): AgentResult;
}

export class Backstop {
  /** Sessions held here with unfinished runs that looked undriven, the epoch they had and when first seen so. */
  private undriven = new Map<string, { epoch: number; since: number }>();

  constructor(private readonly h: BackstopHost) {}

  /**
   * Takes in each session held here whose unfinished runs nothing here drives (its run in flight re-driven from
   * its last written step, its queue run). A run in flight only once it has looked so for a second under the same
   * epoch, so a claim whose load is just starting is not taken for one.
   */
  async run(): Promise<void> {
    const { sessions, log } = this.h;
    const seen = new Map<string, { epoch: number; since: number }>();
    const now = Date.now();
    for (const { key, epoch, queuedOnly } of await this.h.cluster().ownUnfinished()) {
      const st = sessions.get(key);
      if (st && (st.loading || st.active || st.queue.length)) continue;
      if (st && queuedOnly) {
        await this.placeQueued(st); // idle here with runs queued in the store: place them
        continue;
      }
      const was = this.undriven.get(key);
      const since = was?.epoch === epoch ? was.since : now;
      seen.set(key, { epoch, since });
      if (this.h.stopping() || (!queuedOnly && now - since < 1000)) continue;
      // An idle state with a run in flight in the store: that run is driven nowhere. Start the session afresh.
      if (st && sessions.get(key) === st) sessions.delete(key);
      log.warn({ sessionKey: key }, 'cluster: unfinished work on a session held here was not being driven; taking it in');
      seen.delete(key);
      await this.h.adopt(key, epoch);
    }
    this.undriven = seen;
  }

  /** An idle session driven here with queued runs in the store that are not in its queue: place them. */
  private async placeQueued(st: SessionState): Promise<void> {
    const rows = await this.h.store.queuedRuns(st.key);
    if (st.loading || st.active || st.queue.length || !rows.length) return;
    this.h.log.warn({ sessionKey: st.key, runs: rows.length }, 'cluster: queued runs of a session driven here were not in its queue; placing them');
    for (const row of rows) {
      st.known.delete(row.id); // idle with nothing queued: whatever is queued in the store is not running here
      this.h.placeStored(st, row);
    }
  }
}
