// A run's writes (the helpers at the end serve both stores). On PostgreSQL each is one round trip: the message's enqueue (`enqueuePg`: the session's creation,
// the lease claim and, on a free session, the run's start), the run's start and appends (`appendPg`) and its end
// (`finishPgOne`; `finishPg` inside a transaction when it owes callbacks or webhooks). The latter three lock the
// session row and check the lease epoch first (`fenceCte`), and every later part of the statement depends on that
// lock, so a process that lost its lease writes nothing and a takeover waits for the statement to end.
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { PendingEvent } from '../events/types';
import { eventRecord, insertEventsSql, wakeEventsSql } from './event-sql';
import type { PlannedFold } from './event-fold';
import { type DeliveryRowJson, movedDeliveries, movesAny, movesCte, type RowDeliveries, rowDeliveries } from './deliveries';
import { type NewMessage, type NewSession, sessionValues } from './store-base';
import type { Database, MessageRow, ModelUsageTable, RunRow, SessionRow } from './schema';
import { wellFormedJson } from './pg-json';

export type MessageValues = Omit<MessageRow, 'id'>;
export type UsageValues = Omit<ModelUsageTable, 'id'>;

const json = (v: unknown) => (v === undefined ? null : wellFormedJson(v));

/** The stored columns of a new transcript row. */
export function messageValues(m: NewMessage, ts: string): MessageValues {
  return {
    session_key: m.sessionKey,
    role: m.role,
    kind: m.kind,
    content: m.content,
    created_at: ts,
    run_id: m.runId ?? null,
    author_type: m.author.type,
    author_id: m.author.id,
    author_name: m.author.name ?? null,
    tool_name: m.tool?.name ?? null,
    tool_call_id: m.tool?.callId ?? null,
    tool_args: m.tool ? json(m.tool.args ?? null) : null,
    tool_result: m.tool && m.tool.result !== undefined ? json(m.tool.result) : null,
    meta: m.meta ? wellFormedJson(m.meta) : null,
  };
}

/** What a row adds to its session's `bytes`. */
export const rowBytes = (r: MessageValues) => Buffer.byteLength(r.content) + (r.tool_args?.length ?? 0) + (r.tool_result?.length ?? 0);

interface AppendPg {
  key: string;
  /** The lease epoch this process holds on the session (checked under the row lock); none when unleased. */
  epoch?: number;
  rows: MessageValues[];
  /** Start this queued run in the same statement (its status, and the session's `running`). */
  startRun?: string;
  usage?: UsageValues[];
  /** Deliveries these rows carry to their target (`running`) and a callback row answers (`answered`), in the same statement (CONTRACT §9). */
  moves?: RowDeliveries;
  /** Steered messages' queued runs, merged into `into` with these rows (their input): never run on their own. */
  merge?: { runIds: string[]; into: string };
}

interface AppendPgResult {
  /** The session row was there and, with an epoch, still ours. */
  held: boolean;
  /** With `startRun`: the run was still queued and is now running. */
  started: boolean;
  ids: number[];
  /** With `startRun`: the session row after the write (the run's model, cwd and count need no second read). */
  session?: SessionRow;
  /** The deliveries moved to `running`. */
  deliveries?: DeliveryRowJson[] | null;
}

/** Appends rows of one session (and with `startRun`, starts its run) in one statement. */
export async function appendPg(db: Kysely<Database>, o: AppendPg): Promise<AppendPgResult> {
  const ts = o.rows[0]?.created_at ?? new Date().toISOString();
  const bytes = o.rows.reduce((n, r) => n + rowBytes(r), 0);
  const gate = o.startRun ? sql`r` : sql`f`;
  const r = await sql<{ held: number; started: number; ids: Array<number | string> | null; session?: SessionRow | null }>`
    with ${fenceCte(o.key, o.epoch)},
    r as (update runs set status = 'running', started_at = ${ts}
          where id = ${o.startRun ?? null} and status = 'queued' and exists (select 1 from f) returning id),
    s as (update sessions set message_count = message_count + ${o.rows.length}, bytes = bytes + ${bytes}, last_activity_at = ${ts}
            ${o.startRun ? sql`, status = 'running'` : sql``}
          where key = ${o.key} and exists (select 1 from ${gate}) returning *)
    ${messagesCte(o.rows, 's')}${o.usage?.length ? usageCte(o.usage, 's') : sql``}${movesAny(o.moves) ? movesCte(o.moves, sql`s`, ts) : sql``}${o.merge?.runIds.length ? mergeCte(o.merge, ts) : sql``}
    select (select count(*) from f)::int as held, (select count(*) from r)::int as started,
      (select array_agg(id order by id) from m) as ids${o.startRun ? sql`, (select to_jsonb(s) from s) as session` : sql``}${movesAny(o.moves) ? sql`, ${movedDeliveries} as deliveries` : sql``}`.execute(db);
  const x = r.rows[0]! as typeof r.rows[0] & { deliveries?: DeliveryRowJson[] | null };
  return { held: x.held > 0, started: x.started > 0, ids: (x.ids ?? []).map(Number), ...(x.session ? { session: x.session } : {}), deliveries: x.deliveries ?? null };
}

export interface FinishPg {
  key: string;
  epoch?: number;
  runId: string;
  /** The run's end, as the `runs` columns to set. */
  set: Record<string, string | number | null>;
  /** The run's last rows (its final answer), written with its end. */
  rows: MessageValues[];
  usage: UsageValues[];
  /** Go idle; with `release` let the lease go unless queued work arrived meanwhile. */
  idle: boolean;
  release: boolean;
  /** The events to log with the end, built once the rows have their ids (written by the second statement). */
  events: (messageIds: number[]) => PendingEvent[];
  /** The cluster's NOTIFY channel for event wake-ups. */
  notify?: string;
}

/**
 * Steered messages' queued runs marked merged in the statement that writes their rows into the run they joined: a
 * process that dies right after cannot leave them queued, to run again as follow-ups (the fault load's doubled steer).
 */
const mergeCte = (m: { runIds: string[]; into: string }, ts: string) => sql`, mg as (
      update runs set status = 'merged', ended_at = ${ts}, merged_into = ${m.into}
      where id = any(${m.runIds}::text[]) and status = 'queued' and exists (select 1 from s))`;

/**
 * A run's end on PostgreSQL, inside the caller's transaction, in two statements: (1) lock the session row
 * (fenced), record the run's end, its last rows and usage; (2) with the lock held, look for queued work (a fresh
 * snapshot: an enqueue that committed meanwhile is seen) and set the session idle, releasing the lease when
 * there is none. `held` false: the session is gone or another process holds it (nothing was written).
 */
export async function finishPg(tx: Kysely<Database>, o: FinishPg): Promise<{ held: boolean; released: boolean; events: Array<{ id: number; tx: string }> }> {
  const a = await sql<{ held: number; ids: Array<number | string> | null }>`
    with ${fenceCte(o.key, o.epoch)},
    r as (update runs set ${runEndSet(o.set)} where id = ${o.runId} and exists (select 1 from f) returning id)
    ${o.rows.length ? messagesCte(o.rows, 'r') : sql``}${o.usage.length ? usageCte(o.usage, 'r') : sql``}
    select (select count(*) from f)::int as held, ${o.rows.length ? sql`(select array_agg(id order by id) from m)` : sql`null::bigint[]`} as ids`.execute(tx);
  const x = a.rows[0]!;
  if (!x.held) return { held: false, released: false, events: [] };
  const events = o.events((x.ids ?? []).map(Number));
  // The session's new state, the run's events and the cluster's wake-up (delivered at commit), in one statement.
  const b = await sql<{ owner: string | null; id: number | string | null; tx: string | null }>`
    with s as (${sessionAtEnd(o)}),
    ins as (${insertEventsSql(events)})
    ${o.notify && events.length ? sql`, wake as (select ${wakeEventsSql(o.notify)})` : sql``}
    select (select owner from s) as owner, ins.id, ins.tx from (select 1) one
      left join ins on true${o.notify && events.length ? sql` cross join wake` : sql``}
    order by ins.id`.execute(tx);
  const released = o.idle && o.release && b.rows[0]?.owner == null;
  return { held: true, released, events: b.rows.filter((r) => r.id != null).map((r) => ({ id: Number(r.id), tx: r.tx! })) };
}

/** The run's end as `col = value, …` for its `runs` row. */
const runEndSet = (set: FinishPg['set']) => sql.join(Object.keys(set).map((c) => sql`${sql.ref(c)} = ${set[c]}`));

/**
 * The session at a run's end: idle (or running on), the last rows' counts, and with `release` the lease let go
 * unless queued work is visible; with `gate`, only when that CTE has a row.
 */
function sessionAtEnd(o: Pick<FinishPg, 'key' | 'rows' | 'idle' | 'release'>, gate?: string) {
  const bytes = o.rows.reduce((n, r) => n + rowBytes(r), 0);
  const counts = o.rows.length ? sql`, message_count = message_count + ${o.rows.length}, bytes = bytes + ${bytes}, last_activity_at = ${o.rows[0]!.created_at}` : sql``;
  return sql`update sessions set status = ${o.idle ? 'idle' : 'running'}${counts}
        ${o.idle && o.release ? sql`, owner = case when exists (select 1 from runs where session_key = ${o.key} and status = 'queued') then owner else null end` : sql``}
      where key = ${o.key}${gate ? sql` and exists (select 1 from ${sql.raw(gate)})` : sql``} returning owner`;
}

/** CTE `f`: the session row, locked, when it is there and (with `epoch`) still held under that lease epoch. */
const fenceCte = (key: string, epoch?: number) => sql`f as (select key from sessions where key = ${key}${epoch !== undefined ? sql` and epoch = ${epoch}` : sql``} for update)`;

/** The insert of a run's rows, gated on CTE `gate`, as a CTE named `m` (ids rise in the rows' order). */
const messagesCte = (rows: MessageValues[], gate: string) => sql`, m as (
      insert into messages (session_key, role, kind, content, created_at, run_id, author_type, author_id, author_name, tool_name, tool_call_id, tool_args, tool_result, meta)
      select session_key, role, kind, content, created_at, run_id, author_type, author_id, author_name, tool_name, tool_call_id, tool_args, tool_result, meta
      from jsonb_to_recordset(${wellFormedJson(rows.map((x, i) => ({ ...x, o: i })))}::jsonb) as v(o int, session_key text, role text, kind text, content text, created_at text,
        run_id text, author_type text, author_id text, author_name text, tool_name text, tool_call_id text, tool_args text, tool_result text, meta text)
      where exists (select 1 from ${sql.raw(gate)})
      order by o
      returning id)`;

/** The insert of deferred usage rows, gated on CTE `gate`, as a CTE named `u`. */
const usageCte = (usage: UsageValues[], gate: string) => sql`, u as (
      insert into model_usage (run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, created_at, root_run_id)
      select run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, created_at, root_run_id
      from jsonb_to_recordset(${wellFormedJson(usage)}::jsonb) as y(run_id text, session_key text, agent_id text, model text, kind text,
        input_tokens int, output_tokens int, cached_tokens int, cost_usd double precision, priced int, created_at text, root_run_id text)
      where exists (select 1 from ${sql.raw(gate)}))`;

/**
 * A run's end in ONE statement (no BEGIN/COMMIT), when it owes no callbacks or webhooks: lock and fence the
 * session, end the run, write its last rows and usage, set the session idle (releasing the lease unless queued
 * work is visible), log its events (a message event gets its row's id in SQL) and NOTIFY. An enqueue that
 * commits while this statement waits for the lock is not seen, and the lease is released anyway: that enqueue
 * saw this process as the owner and tells it (`work`), and the orchestrator claims the session again.
 * `messageOf[i]`: the index of the row event i carries (its data's `message.id` is set here), or -1.
 */
export async function finishPgOne(
  db: Kysely<Database>,
  o: Omit<FinishPg, 'events'> & { events: PendingEvent[]; messageOf: number[]; fold?: PlannedFold | null },
): Promise<{ held: boolean; released: boolean; ids: number[]; events: Array<{ id: number; tx: string }> }> {
  const fold = o.fold && o.events.length ? o.fold : null;
  const res = await sql<{ held: number; owner: string | null; mids: Array<number | string> | null; id: number | string | null; tx: string | null }>`
    with ${fenceCte(o.key, o.epoch)},
    r as (update runs set ${runEndSet(o.set)} where id = ${o.runId} and exists (select 1 from f) returning id)
    ${o.rows.length ? messagesCte(o.rows, 'r') : sql`, m as (select null::bigint as id where false)`}
    , mm as (select id, (row_number() over (order by id))::int - 1 as o from m)
    ${o.usage.length ? usageCte(o.usage, 'r') : sql``},
    s as (${sessionAtEnd(o, 'f')})
    ${fold ? foldedEventsCtes(o.events, o.messageOf, fold) : sql`, ins as (${insertEventsSql(o.events, {
      messageOf: o.messageOf,
      join: sql` left join mm on mm.o = x.m`,
      where: sql`exists (select 1 from f)`,
      data: sql`case when x.m is null then x.d else jsonb_set(x.d::jsonb, '{message,id}', to_jsonb(mm.id))::text end`,
    })})`}
    ${o.notify && o.events.length ? sql`, wake as (select ${wakeEventsSql(o.notify)} where exists (select 1 from f))` : sql``}
    select (select count(*) from f)::int as held, (select owner from s) as owner, (select array_agg(id order by id) from m) as mids,
      ${fold ? sql`ev.nid as id, case when ev.nid is not null then pg_current_xact_id()::text end as tx from (select 1) one left join ev on true` : sql`ins.id, ins.tx from (select 1) one left join ins on true`}
      ${o.notify && o.events.length ? sql` left join wake on true` : sql``}
    order by ${fold ? sql`ev.o` : sql`ins.id`}`.execute(db);
  const x = res.rows[0]!;
  if (!x.held) return { held: false, released: false, ids: [], events: [] };
  return {
    held: true,
    released: o.idle && o.release && x.owner == null,
    ids: (x.mids ?? []).map(Number),
    events: res.rows.filter((r) => r.id != null).map((r) => ({ id: Number(r.id), tx: r.tx! })),
  };
}

/**
 * A run's events written with their folds planned (`foldPlan`), gated on CTE `f`, after CTE `mm` (the rows' ids by
 * their index): `ev`, every event with an id taken from the log's sequence (they rise with the events' order; the
 * ids are paired with the events by rank, whatever order nextval ran in); `fd`, each fold's data (its entries with
 * their id offsets) and last id; `ins`, the insert of every event but those a fold stands for, a fold's first event
 * stored as the folded row (at its place, ending at the last one's: the same transaction). What `foldWrittenPg`
 * makes of the rows afterwards, with no rows written to be rewritten and deleted.
 */
function foldedEventsCtes(events: PendingEvent[], messageOf: number[], plan: PlannedFold) {
  const records = events.map((e, i) => ({ ...eventRecord(e, i, messageOf), g: plan.group[i], t: plan.tail[i] }));
  // One id per record, drawn over the records themselves: a `generate_series(1, $n)` here made PostgreSQL cost the
  // statement's generic plan for 1,000 events (it cannot see $n) against 2–10 in each custom plan, so it never took
  // the generic plan and planned this whole statement anew at every run's end (0.7 ms of a turn's ~2.7 ms of backend
  // CPU, pg_stat_statements' plan time; pg-plans.test.ts reads generic_plans in pg_prepared_statements).
  return sql`, evx as (
      select x.* from jsonb_to_recordset(${wellFormedJson(records)}::jsonb) as x(o int, r text, s int, st text, ts text, k text, d text, m int, g int, t text)
      where exists (select 1 from f)),
    ev as (
      select x.*, a.nid from evx x
      join (select nid, (row_number() over (order by nid))::int - 1 as o
            from (select nextval(pg_get_serial_sequence('events', 'id')) as nid from evx) q) a on a.o = x.o),
    fd as (
      select v.g, '[' || string_agg('[' || (v.nid - h.nid)::text || ',' || v.t || ']', ',' order by v.o) || ']' as data, max(v.nid) as last
      from ev v join ev h on h.o = v.g where v.g is not null group by v.g),
    ins as (
      insert into events (id, run_id, seq, stream, ts, session_key, data, fold_id, fold_tx)
      select x.nid, x.r, x.s, x.st, x.ts, x.k,
        case when fd.g is not null then fd.data when x.m is null then x.d else jsonb_set(x.d::jsonb, '{message,id}', to_jsonb(mm.id))::text end,
        fd.last, case when fd.g is not null then pg_current_xact_id() end
      from ev x left join mm on mm.o = x.m left join fd on fd.g = x.o
      where x.g is null or x.g = x.o
      order by x.o)`;
}

export interface EnqueuePg {
  /** The run to insert (its `queue_mode` is decided here: see `mode`). */
  row: RunRow;
  /** This process (the lease holder it becomes when the session is free). */
  me: string;
  /** The session, created (unowned, idle) when missing: the statement claims it at once. */
  session: NewSession;
  /** The session's mode decides when none was asked for; `neverRefuse` queues `reject`/`interrupt` as follow-ups. */
  mode: { asked: string | null; fallback: string; neverRefuse: boolean };
  /** The run's input rows: when the session is free and claimed here, the run starts in this statement. */
  start: MessageValues[];
  /** False: only queue the run, never claim the lease (a stopping process: whoever takes the session runs it). */
  claim?: boolean;
}

export interface EnqueuePgResult {
  claimed: number | null;
  /** The lease holder as this statement saw it. */
  owner: string | null;
  mode: string;
  inserted: boolean;
  /** The run started here: its input rows are in the transcript (`ids`), the session row is `session`. */
  started: boolean;
  ids: number[];
  session?: SessionRow;
  active: string | null;
  activeOrigin: string | null;
  unfinished: RunRow[] | null;
  /** The deliveries the started run's input carried, moved to `running` (CONTRACT §9). */
  deliveries?: DeliveryRowJson[] | null;
}

/**
 * True when the gateway process `id` is alive (not declared dead, not stopped): a lease is claimed only under such an
 * identity (`enqueuePg` here, `Cluster.claim`). A process declared dead claims nothing until it registered again.
 */
export const identityAlive = (id: string) => sql<boolean>`exists (select 1 from processes where id = ${id} and status = 'alive')`;

/**
 * A message for a session, in ONE statement: create the session if missing, decide the queue mode (asked, or the
 * session's), claim the lease when no one holds it, and insert the run: queued, or, when the claim found the
 * session free, already running with its input rows written (the common path: a turn's start costs no second
 * round trip). A process whose identity is no longer alive (declared dead, not told yet) claims nothing: its
 * message is queued for whoever holds or claims the session. With `reject`, nothing is inserted unless the claim
 * succeeded. With a claim, the session's other unfinished runs come back (locked FOR SHARE: a run that ended while
 * this statement waited for the session's lock is seen as ended, not re-driven).
 */
export async function enqueuePg(db: Kysely<Database>, o: EnqueuePg): Promise<EnqueuePgResult> {
  const { row, start } = o;
  const k = row.session_key;
  const ts = start[0]?.created_at ?? row.created_at;
  const n = start.length;
  const bytes = start.reduce((a, r) => a + rowBytes(r), 0);
  const mayClaim = o.claim !== false;
  const dids = rowDeliveries(start.map((v) => v.meta));
  // The new session's columns (as `ensureSession` writes them), claimed by this process and, when the run starts
  // here, running with its input rows counted; an existing free session takes the same additions (`excluded`).
  const go = (then: unknown, otherwise: unknown) => sql`case when fr.go then ${then} else ${otherwise} end`;
  const v = sessionValues(o.session, ts);
  const cols: Record<string, RawBuilder<unknown>> = {
    ...Object.fromEntries(Object.entries(v).map(([c, x]) => [c, typeof x === 'number' ? sql`${x}::int` : sql`${x}`])),
    message_count: go(sql`${n}::int`, 0),
    bytes: go(sql`${bytes}::bigint`, 0),
    status: go('running', 'idle'),
    owner: mayClaim ? sql`case when (select may from al) then ${o.me} end` : sql`null::text`,
    epoch: sql`nextval('session_epochs')`, // epochs never repeat (0011_fencing): a re-created session's too
  };
  const r = await sql<{ claimed: number | null; started: boolean; session: SessionRow | null; mode: string; owner: string | null; inserted: number; ids: Array<number | string> | null; active: string | null; active_origin: string | null; unfinished: RunRow[] | null }>`
    with q as (select queue_mode from sessions where key = ${k}),
    al as (select ${mayClaim ? identityAlive(o.me) : sql`false`} as may),
    md as (select case when ${o.mode.neverRefuse}::boolean and x.m in ('reject', 'interrupt') then 'followup' else x.m end as mode
           from (select coalesce(${o.mode.asked}::text, (select queue_mode from q), ${o.mode.fallback}::text) as m) x),
    fr as (select ${n > 0}::boolean and (select may from al) and not exists (
             select 1 from runs where session_key = ${k} and status in ('queued', 'running', 'waiting_approval')) as go),
    c as (
      insert into sessions as s (${sql.join(Object.keys(cols).map((c) => sql.ref(c)))})
      select ${sql.join(Object.values(cols))}
      from fr
      on conflict (key) do update set owner = excluded.owner, epoch = excluded.epoch,
        status = case when excluded.status = 'running' then 'running' else s.status end,
        message_count = s.message_count + excluded.message_count, bytes = s.bytes + excluded.bytes,
        last_activity_at = case when excluded.message_count > 0 then excluded.last_activity_at else s.last_activity_at end
      where s.owner is null and (select may from al)
      returning s.epoch, s.owner, to_jsonb(s.*) as row),
    cl as (select * from c where owner is not null),
    g as (select 1 from cl, fr where fr.go),
    i as (
      insert into runs (id, session_key, status, input, queue_mode, response, error, created_at, started_at, ended_at, origin, webhook, last_seq, merged_into)
      select ${row.id}, ${k}, case when exists (select 1 from g) then 'running' else 'queued' end, ${row.input}, (select mode from md), null, null,
        ${row.created_at}, case when exists (select 1 from g) then ${ts} end, null, ${row.origin}, ${row.webhook}, 0, null
      where (select mode from md) <> 'reject' or exists (select 1 from cl)
        or (not (select may from al) and not exists (select 1 from runs where session_key = ${k} and status in ('queued', 'running', 'waiting_approval')))
      returning id)
    ${n ? messagesCte(start, 'g') : sql`, m as (select null::bigint as id where false)`},
    a as (select id, origin from runs where session_key = ${k} and status in ('running', 'waiting_approval') order by created_at limit 1)
    ${movesAny(dids) ? movesCte(dids, sql`g`, ts) : sql``}
    select ${movesAny(dids) ? sql`${movedDeliveries} as deliveries, ` : sql``}(select epoch from cl) as claimed, exists (select 1 from g) as started, (select row from cl where exists (select 1 from g)) as session,
      (select mode from md) as mode, (select owner from sessions where key = ${k}) as owner, (select count(*) from i)::int as inserted,
      (select array_agg(id order by id) from m) as ids, (select id from a) as active, (select origin from a) as active_origin,
      (select json_agg(u order by u.created_at, u.id) from (
         select * from runs where session_key = ${k} and status in ('queued', 'running', 'waiting_approval') and id <> ${row.id}
           and exists (select 1 from cl) and not exists (select 1 from g)
         for share) u) as unfinished`.execute(db);
  const x = r.rows[0]!;
  const claimed = x.claimed == null ? null : Number(x.claimed);
  return {
    claimed,
    owner: claimed !== null ? o.me : x.owner,
    mode: x.mode,
    inserted: Number(x.inserted) === 1,
    started: !!x.started,
    ids: (x.ids ?? []).map(Number),
    ...(x.session ? { session: x.session } : {}),
    active: x.active,
    activeOrigin: x.active_origin,
    unfinished: claimed === null ? null : (x.unfinished ?? []),
    deliveries: (x as { deliveries?: DeliveryRowJson[] | null }).deliveries ?? null,
  };
}

/** A run's prepared events without those of its last rows (not written): later seqs close up, so seq rises by 1. */
export function withoutRowEvents(events: PendingEvent[], messageOf: number[]): PendingEvent[] {
  const out: PendingEvent[] = [];
  let dropped = 0;
  events.forEach((e, i) => {
    if (messageOf[i]! >= 0) dropped++;
    else out.push(dropped ? { ...e, seq: e.seq - dropped } : e);
  });
  return out;
}

/**
 * Whether a session has queued runs, looked at with its row locked (in `tx`): an enqueue from another process
 * either committed before (its run is seen: this statement reads a fresh snapshot) or waits for this
 * transaction and then claims.
 */
export async function queuedBehindLock(tx: Kysely<Database>, key: string): Promise<boolean> {
  await tx.selectFrom('sessions').select('key').where('key', '=', key).forUpdate().execute();
  return !!(await tx.selectFrom('runs').select('id').where('session_key', '=', key).where('status', '=', 'queued').limit(1).executeTakeFirst());
}
