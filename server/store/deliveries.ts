// Deliveries (CONTRACT §9): the durable record of every hand-off, its states moved forward only, in the caller's transaction.
import { ARCHIVE_KEY_LIKE } from './session-archive';
import crypto from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { CrosstalkError } from '../errors';
import { decodeCursor, encodeCursor } from './cursor';
import type { Database, DeliveryRow } from './schema';

export type DeliveryKind = 'session_message' | 'delegate' | 'callback' | 'channel' | 'webhook' | 'push';
export type DeliveryState = 'accepted' | 'delivered' | 'running' | 'answered' | 'failed' | 'dead';
export const DELIVERY_KINDS: readonly DeliveryKind[] = ['session_message', 'delegate', 'callback', 'channel', 'webhook', 'push'];
export const DELIVERY_STATES: readonly DeliveryState[] = ['accepted', 'delivered', 'running', 'answered', 'failed', 'dead'];

/** The states a delivery may move to `to` from: forward only, and nothing leaves an end (answered, failed, dead). */
export const EARLIER: Record<DeliveryState, DeliveryState[]> = {
  accepted: [],
  delivered: ['accepted'],
  running: ['accepted', 'delivered'],
  answered: ['accepted', 'delivered', 'running'],
  failed: ['accepted', 'delivered', 'running'],
  dead: ['accepted', 'delivered'],
};

/** A delivery as the API shows it (CONTRACT §9). */
export interface Delivery {
  deliveryId: string;
  kind: DeliveryKind;
  from: { sessionKey?: string; runId?: string };
  to: { sessionKey?: string; channel?: string; target?: string; url?: string };
  state: DeliveryState;
  runId?: string;
  attempts: number;
  error?: { code: string; message: string };
  createdAt: string;
  updatedAt: string;
}

/** What a new delivery says about itself; the id is the caller's when it derives from a call (exactly once). */
export interface NewDelivery {
  id?: string;
  kind: DeliveryKind;
  from?: { sessionKey?: string | null; runId?: string | null; callId?: string | null };
  to: { sessionKey?: string | null; channel?: string | null; target?: string | null; url?: string | null };
  state?: DeliveryState;
  runId?: string | null;
  /** The row this delivery records elsewhere (a webhook outbox row, a callback row), for the migration and retries. */
  source?: string | null;
}

/** A change to hand on as `delivery` events: the row after it, and the states it went through (in order). */
export interface DeliveryChange {
  row: DeliveryRow;
  states: DeliveryState[];
}

export const newDeliveryId = () => `dlv_${crypto.randomUUID()}`;

export function deliveryValues(d: NewDelivery, ts: string): DeliveryRow {
  return {
    id: d.id ?? newDeliveryId(),
    kind: d.kind,
    from_session: d.from?.sessionKey ?? null,
    from_run: d.from?.runId ?? null,
    from_call: d.from?.callId ?? null,
    to_session: d.to.sessionKey ?? null,
    to_channel: d.to.channel ?? null,
    to_target: d.to.target ?? null,
    to_url: d.to.url ?? null,
    state: d.state ?? 'accepted',
    run_id: d.runId ?? null,
    attempts: 0,
    error_code: null,
    error_message: null,
    source: d.source ?? null,
    created_at: ts,
    updated_at: ts,
    not_before: null,
    round_from: 0,
  };
}

export function toDelivery(r: DeliveryRow): Delivery {
  const from: Delivery['from'] = {};
  if (r.from_session) from.sessionKey = r.from_session;
  if (r.from_run) from.runId = r.from_run;
  // (`from_call` stays in the store, for `deliveries.forCall`: the record's `from` is CONTRACT §9's exactly.)
  const to: Delivery['to'] = {};
  if (r.to_session) to.sessionKey = r.to_session;
  if (r.to_channel) to.channel = r.to_channel;
  if (r.to_target) to.target = r.to_target;
  if (r.to_url) to.url = r.to_url;
  return {
    deliveryId: r.id,
    kind: r.kind as DeliveryKind,
    from,
    to,
    state: r.state as DeliveryState,
    ...(r.run_id ? { runId: r.run_id } : {}),
    attempts: Number(r.attempts),
    ...(r.error_code ? { error: { code: r.error_code, message: r.error_message ?? '' } } : {}),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * The deliveries transcript rows move when they are written, as their meta names them: the one that put a row there
 * (`deliveryId`) goes `running` (through `delivered`); a callback row also answers the hand-off whose answer it carries
 * (`answersDeliveryId`): CONTRACT §9's `answered` is "written as its callback row", so it moves with the row's write,
 * not when the callback run is queued behind a busy caller.
 */
export function metaDeliveries(metas: ReadonlyArray<{ deliveryId?: unknown; answersDeliveryId?: unknown } | null | undefined>): RowDeliveries {
  const out: RowDeliveries = { running: [], answered: [] };
  for (const m of metas) {
    if (typeof m?.deliveryId === 'string') out.running.push(m.deliveryId);
    if (typeof m?.answersDeliveryId === 'string') out.answered.push(m.answersDeliveryId);
  }
  return out;
}

/**
 * `metaDeliveries` of rows' meta as stored (JSON text). Most rows carry neither key and are not parsed:
 * `eliveryId"` is in both `"deliveryId"` and `"answersDeliveryId"`.
 */
export const rowDeliveries = (metas: ReadonlyArray<string | null | undefined>): RowDeliveries =>
  metaDeliveries(metas.map((meta) => (meta?.includes('eliveryId"') ? jsonOrNull(meta) : null)) as Array<{ deliveryId?: unknown } | null>);

const jsonOrNull = (s: string | null): unknown => {
  try {
    return s ? JSON.parse(s) : null;
  } catch {
    return null;
  }
};

/**
 * The hand-offs a queued run's row carries, to fail with it when it will never start (`endQueued`): its own
 * (`origin.deliveryId`, as its input rows would have moved it) and, for a callback's run, the send its row would have
 * answered. Each with its reason.
 */
export function queuedRunDeliveries(run: { id: string; input: string; origin: string | null }, error: string): Array<{ ids: string[]; message: string }> {
  const origin = jsonOrNull(run.origin) as { deliveryId?: unknown } | null;
  const inputs = jsonOrNull(run.input);
  const d = metaDeliveries((Array.isArray(inputs) ? inputs : []).map((i: { meta?: { deliveryId?: unknown } }) => i?.meta));
  const own = [...new Set([...(typeof origin?.deliveryId === 'string' ? [origin.deliveryId] : []), ...d.running])];
  return [
    { ids: own, message: `target run error: ${error}` },
    { ids: d.answered, message: `the callback's run ${run.id} ended before its row was written: ${error}` },
  ].filter((x) => x.ids.length);
}

export interface RowDeliveries {
  running: string[];
  answered: string[];
}

export const movesAny = (d: RowDeliveries | undefined): d is RowDeliveries => !!d && d.running.length + d.answered.length > 0;

/** Inserts deliveries unless their ids exist (a re-driven call finds its own); returns the new ones. */
export async function insertDeliveries(db: Kysely<Database>, list: NewDelivery[], ts = new Date().toISOString()): Promise<DeliveryChange[]> {
  if (!list.length) return [];
  const values = list.map((d) => deliveryValues(d, ts));
  const ids = await db.insertInto('deliveries').values(values).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute();
  const fresh = new Set(ids.map((r) => r.id));
  return values.filter((v) => fresh.has(v.id)).map((row) => ({ row, states: [row.state as DeliveryState] }));
}

export interface Advance {
  error?: { code: string; message: string } | null;
  /** The target run (null: none, the target refused the hand-off before any run was made). */
  runId?: string | null;
  /** Count one more attempt (webhooks, channel sends, pushes), or this many (attempts lost with a process, then this one). */
  attempt?: boolean | number;
}

/**
 * Moves deliveries forward to `to`, only from an earlier state (the UPDATE's own `where`), so a late or repeated
 * step changes nothing. Returns the rows it changed, with the states they went through (`via` first, when given).
 */
export async function advanceDeliveries(db: Kysely<Database>, ids: string[], to: DeliveryState, o: Advance = {}, via: DeliveryState[] = []): Promise<DeliveryChange[]> {
  if (!ids.length) return [];
  const ts = new Date().toISOString();
  const before = await db.selectFrom('deliveries').select(['id', 'state']).where('id', 'in', ids).where('state', 'in', EARLIER[to]).execute();
  if (!before.length) return [];
  const rows = await db
    .updateTable('deliveries')
    .set((eb) => ({
      state: to,
      updated_at: ts,
      ...(o.error !== undefined ? { error_code: o.error?.code ?? null, error_message: o.error?.message ?? null } : {}),
      ...(o.runId !== undefined ? { run_id: o.runId } : {}),
      ...(o.attempt ? { attempts: eb('attempts', '+', o.attempt === true ? 1 : o.attempt) } : {}),
    }))
    .where('id', 'in', before.map((b) => b.id))
    .where('state', 'in', EARLIER[to])
    .returningAll()
    .execute();
  const was = new Map(before.map((b) => [b.id, b.state as DeliveryState]));
  return rows.map((row) => {
    const from = was.get(row.id);
    // The intermediate states the write skipped (accepted → running passes delivered), for the events.
    const passed = via.filter((s) => from !== undefined && EARLIER[s].includes(from));
    return { row, states: [...passed, to] };
  });
}

/** The run a hand-off reached, when it is not the one planned at its start (steered into the target's active run, or collected into its queued one). */
export async function setDeliveryRun(db: Kysely<Database>, id: string, runId: string): Promise<void> {
  await db.updateTable('deliveries').set({ run_id: runId }).where('id', '=', id).execute();
}

/**
 * `count` more attempts of a delivery still on its way (its state stays): a failed one with its `error` (the last one);
 * a webhook's as it begins (count 1, no error), its failure then with count 0.
 */
export async function countAttempts(db: Kysely<Database>, id: string, count: number, error?: { code: string; message: string }): Promise<void> {
  await db
    .updateTable('deliveries')
    .set((eb) => ({ attempts: eb('attempts', '+', count), ...(error ? { error_code: error.code, error_message: error.message } : {}), updated_at: new Date().toISOString() }))
    .where('id', '=', id)
    .where('state', 'in', ['accepted', 'delivered'])
    .execute();
}

/** A `dead` delivery taken back to `accepted` for another round of attempts, under the same id; false when not dead. */
export async function reopenDead(db: Kysely<Database>, id: string): Promise<DeliveryChange | null> {
  const rows = await db
    .updateTable('deliveries')
    .set({ state: 'accepted', error_code: null, error_message: null, updated_at: new Date().toISOString() })
    .where('id', '=', id)
    .where('state', '=', 'dead')
    .returningAll()
    .execute();
  return rows[0] ? { row: rows[0], states: ['accepted'] } : null;
}

export function getDeliveryRow(db: Kysely<Database>, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface ListDeliveries {
  sessionKey?: string;
  state?: DeliveryState;
  kind?: DeliveryKind;
  limit: number;
  cursor?: string;
}

/** Newest first, keyset on (created_at, id); `sessionKey` matches either end (two index scans, merged). */
export async function listDeliveries(db: Kysely<Database>, o: ListDeliveries): Promise<{ deliveries: Delivery[]; next_cursor: string | null }> {
  const scope = JSON.stringify([o.sessionKey ?? '', o.state ?? '', o.kind ?? '']);
  const after = o.cursor ? (decodeCursor(o.cursor, 'deliveries', scope, 2) as [string, string]) : undefined;
  const page = (end?: 'from_session' | 'to_session') => {
    let q = db.selectFrom('deliveries').selectAll();
    if (end) q = q.where(end, '=', o.sessionKey!);
    if (o.state) q = q.where('state', '=', o.state);
    if (o.kind) q = q.where('kind', '=', o.kind);
    if (after) {
      const [ts, id] = after;
      q = q.where((eb) => eb.or([eb('created_at', '<', ts), eb.and([eb('created_at', '=', ts), eb('id', '<', id)])]));
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(o.limit + 1).execute();
  };
  let rows: DeliveryRow[];
  if (o.sessionKey) {
    const [a, b] = await Promise.all([page('from_session'), page('to_session')]);
    const seen = new Map<string, DeliveryRow>();
    for (const r of [...a, ...b]) seen.set(r.id, r);
    rows = [...seen.values()].sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1));
  } else rows = await page();
  const more = rows.length > o.limit;
  rows = rows.slice(0, o.limit);
  const last = rows[rows.length - 1];
  return { deliveries: rows.map(toDelivery), next_cursor: more && last ? encodeCursor('deliveries', scope, [last.created_at, last.id]) : null };
}

/**
 * The newest `dead` deliveries (the board's "Failed" group), but those of a deleted session (the session the item names,
 * from_session else to_session, under its archive key `<key>#deleted-<ms>`: `#` is outside the key grammar).
 */
export async function deadDeliveries(db: Kysely<Database>, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('deliveries')
    .selectAll()
    .where('state', '=', 'dead')
    .where((eb) => eb(eb.fn.coalesce('from_session', 'to_session', eb.val('')), 'not like', ARCHIVE_KEY_LIKE))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export function requireDelivery(row: DeliveryRow | undefined, id: string): DeliveryRow {
  if (!row) throw new CrosstalkError('unknown_delivery', `no delivery ${id}`);
  return row;
}

/**
 * PostgreSQL statements (`appendPg`, `enqueuePg`): CTEs moving the deliveries of the rows written (`rowDeliveries`), to
 * `running` (dl) and `answered` (da), once `gate` has a row; `movedDeliveries` selects them, each with where it moved.
 */
export function movesCte(d: RowDeliveries, gate: ReturnType<typeof sql>, ts: string) {
  return sql`, dl as (update deliveries set state = 'running', updated_at = ${ts}
      where id = any(${d.running}::text[]) and state in ('accepted', 'delivered') and exists (select 1 from ${gate}) returning *),
    da as (update deliveries set state = 'answered', updated_at = ${ts}, error_code = null, error_message = null
      where id = any(${d.answered}::text[]) and state in ('accepted', 'delivered', 'running') and exists (select 1 from ${gate}) returning *)`;
}

export const movedDeliveries = sql`(select json_agg(x) from (select dl.*, 'running' as moved from dl union all select da.*, 'answered' as moved from da) x)`;

/** A delivery row as PostgreSQL's `json_agg` returns it (numbers as numbers, the same columns), and where it moved. */
export type DeliveryRowJson = DeliveryRow & { moved?: 'running' | 'answered' };

/** Moved rows as changes for their events: `running` passes `delivered`; the answered ones follow the running ones. */
export function movedChanges(rows: DeliveryRowJson[]): DeliveryChange[] {
  const change = ({ moved, ...r }: DeliveryRowJson): DeliveryChange => ({ row: { ...r, attempts: Number(r.attempts) }, states: moved === 'answered' ? ['answered'] : ['delivered', 'running'] });
  return [...rows.filter((r) => r.moved !== 'answered').map(change), ...rows.filter((r) => r.moved === 'answered').map(change)];
}
