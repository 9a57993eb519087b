// What a run's event log lacks of it (read by its re-drive): its `lifecycle start`, and the `message` events of its rows.
// A run's rows are committed before their events, which the bus writes in batches a moment later (server/events/bus.ts);
// a process that dies in between leaves rows with no event, and the process that re-drives the run emits them.
import type { Kysely } from 'kysely';
import type { TranscriptMessage } from '../events/types';
import type { Database } from './schema';
import { toTranscriptMessage } from './store-base';

/** How far before the run's start its session's log is read: the clocks of a cluster's processes may differ this much. */
export const CLOCK_SKEW_MS = 5 * 60_000;

export interface RunLogGaps {
  /** Whether the log holds the run's `lifecycle` `start`. */
  started: boolean;
  /** The run's rows in its session with no `message` event in the log (under any run id), oldest first. */
  unlogged: TranscriptMessage[];
}

/**
 * Two reads, both bounded: the run's rows in its session (`messages_run`), and the session's `message` and `lifecycle`
 * events since the run started (`since`, less CLOCK_SKEW_MS). A row's event may be under another id than the run's (a
 * notice or mirror written outside the run has one of its own, `evt_…`), so every `message` event of the session in
 * that stretch counts. The stretch starts after the newest event older than it: found by walking the session's index
 * back from its newest event, so the reads cost what the session logged since the run started, not its whole log.
 */
export async function runLogGaps(db: Kysely<Database>, o: { runId: string; sessionKey: string; since: string }): Promise<RunLogGaps> {
  const from = new Date(Date.parse(o.since) - CLOCK_SKEW_MS).toISOString();
  const rows = await db.selectFrom('messages').selectAll().where('run_id', '=', o.runId).where('session_key', '=', o.sessionKey).orderBy('id').execute();
  const events = await db
    .selectFrom('events')
    .select(['run_id', 'stream', 'data'])
    .where('session_key', '=', o.sessionKey)
    .where('stream', 'in', ['message', 'lifecycle'])
    .where('id', '>', (eb) =>
      eb.fn.coalesce(eb.selectFrom('events').select('id').where('session_key', '=', o.sessionKey).where('ts', '<', from).orderBy('id', 'desc').limit(1), eb.lit(0)),
    )
    .execute();
  let started = false;
  const logged = new Set<number>();
  for (const e of events) {
    const data = JSON.parse(e.data) as { phase?: unknown; message?: { id?: unknown } };
    if (e.stream === 'message' && data.message?.id !== undefined) logged.add(Number(data.message.id));
    else if (e.stream === 'lifecycle' && e.run_id === o.runId && data.phase === 'start') started = true;
  }
  return { started, unlogged: rows.filter((r) => !logged.has(Number(r.id))).map(toTranscriptMessage) };
}
