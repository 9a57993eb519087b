// Replies a process died owing: a run's reply row committed, but its delivery record (dlv_reply_<row id>) not yet
// written when the process was killed. Nothing else would ever send them; found here by the newest rows.
import type { TranscriptMessage } from '../events/types';
import { toTranscriptMessage } from '../store/store-base';
import type { Store } from '../store/store';
import { parseChannelSource } from './channel-deliveries';

/** On several processes, rows newer than this may be a live router's (it writes their records within milliseconds). */
export const OWED_CLUSTER_GRACE_MS = 2_000;
/** Rows older than this are not looked at: a reply owed that long is news no one waits for. */
export const OWED_HORIZON_MS = 15 * 60_000;
const PAGE = 500;
const MAX_PAGES = 6;

export const replyDeliveryId = (rowId: number) => `dlv_reply_${rowId}`;

/** The newest transcript row's id (0 when there is none). */
export async function newestMessageId(store: Store): Promise<number> {
  const r = await store.db.selectFrom('messages').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst();
  return Number(r?.id ?? 0);
}

/**
 * The assistant replies of channel runs, written between the horizon and the grace, that have no delivery record and
 * were not sent by the run's own `message` calls: newest rows first, scanned by id (the primary key) a page at a time.
 * The caller claims each by writing its record (the insert is the claim: one process sends it).
 */
export async function owedReplies(store: Store, isChannelRun: (origin: unknown) => boolean, o: { graceMs: number; upTo?: number; now?: number }): Promise<TranscriptMessage[]> {
  const now = o.now ?? Date.now();
  const newest = new Date(now - o.graceMs).toISOString();
  const oldest = new Date(now - OWED_HORIZON_MS).toISOString();
  const found: TranscriptMessage[] = [];
  // `upTo`: rows this process may have written are left to its own router (SQLite: the rows there before it started).
  let before: number | undefined = o.upTo === undefined ? undefined : o.upTo + 1;
  for (let page = 0; page < MAX_PAGES; page++) {
    let q = store.db.selectFrom('messages').selectAll().where('role', '=', 'assistant').where('kind', '=', 'message').where('run_id', 'is not', null);
    if (before !== undefined) q = q.where('id', '<', before);
    const rows = await q.orderBy('id', 'desc').limit(PAGE).execute();
    for (const r of rows) if (r.created_at <= newest && r.created_at >= oldest && r.content.trim()) found.push(toTranscriptMessage(r));
    if (rows.length < PAGE || rows.at(-1)!.created_at < oldest) break;
    before = Number(rows.at(-1)!.id);
  }
  if (!found.length) return [];
  const runIds = [...new Set(found.map((m) => m.runId!))];
  const runs = await store.db.selectFrom('runs').select(['id', 'origin']).where('id', 'in', runIds).where('origin', 'is not', null).execute();
  const channelRuns = new Set(runs.filter((r) => isChannelRun(JSON.parse(r.origin!))).map((r) => r.id));
  const candidates = found.filter((m) => channelRuns.has(m.runId!));
  if (!candidates.length) return [];
  const recorded = new Set((await store.db.selectFrom('deliveries').select('id').where('id', 'in', candidates.map((m) => replyDeliveryId(m.id))).execute()).map((r) => r.id));
  // Text a run sent through its `message` tool is its reply already (the live router skips it the same way).
  const sent = await store.db.selectFrom('deliveries').select(['from_run', 'source']).where('kind', '=', 'channel').where('from_run', 'in', [...channelRuns]).execute();
  const sentText = new Set(
    sent.flatMap((d) => {
      const src = parseChannelSource(d.source);
      return src && src.via !== 'reply' ? [`${d.from_run}|${src.text.trim()}`] : [];
    }),
  );
  return candidates.filter((m) => !recorded.has(replyDeliveryId(m.id)) && !sentText.has(`${m.runId}|${m.content.trim()}`)).reverse();
}
