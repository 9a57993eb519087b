// Writes transcript rows and emits their `message` events, for a run or for changes made outside any run.
import crypto from 'node:crypto';
import type { EventBus } from '../events/bus';
import type { TranscriptMessage } from '../events/types';
import type { NewMessage, Store } from '../store/store';

/**
 * Appends rows and emits one `message` event per row. Rows written outside a run (a `send` mirror,
 * an inbound notice) get their events under a one-off id `evt_<uuid>` so the event log stays uniform.
 */
export async function appendTranscript(store: Store, bus: EventBus, msgs: NewMessage[], runId?: string): Promise<TranscriptMessage[]> {
  // Rows a run driven here under its lease writes into its own session (send_message, a delegate's notice to its
  // caller) are that run's writes: fenced (refused when this process holds no fence for the session any more).
  const own = runId ? bus.leasedSession(runId) : undefined;
  const rows = await store.appendMessages(msgs, { run: !!own && msgs.every((m) => m.sessionKey === own) });
  if (!rows.length) return rows;
  if (runId && bus.currentSeq(runId) > 0) {
    for (const m of rows) bus.emit(runId, 'message', { message: m });
    return rows;
  }
  const bySession = new Map<string, TranscriptMessage[]>();
  for (const m of rows) bySession.set(m.sessionKey, [...(bySession.get(m.sessionKey) ?? []), m]);
  for (const [sessionKey, ms] of bySession) {
    const id = runId ?? `evt_${crypto.randomUUID()}`;
    const registered = bus.currentSeq(id) > 0;
    if (!registered) bus.registerRun(id, sessionKey, await store.maxSeq(id));
    for (const m of ms) bus.emit(id, 'message', { message: m });
    if (!registered) bus.unregisterRun(id);
  }
  return rows;
}
