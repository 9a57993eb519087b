// `runs.board` (CONTRACT §3, §7 "Agent board"): every session's and delegate's runs in four groups, newest first.
import type { ExpressionBuilder } from 'kysely';
import type { Database } from '../store/schema';
import type { Store } from '../store/store';
import { agentIdOf } from '../sessions/keys';
import { parentChains } from './room';
import { deadDeliveries } from '../store/deliveries';
import { ARCHIVE_KEY_LIKE, isArchiveKey } from '../store/session-archive';
import { budgetRootOf, capsGranted, treeOfRow } from '../orchestrator/budget';
import type { Board, BoardItem } from './types';

export type { Board, BoardItem };

type RunPick = { id: string; session_key: string; status: string; created_at: string; started_at: string | null; ended_at: string | null; origin: string | null; cost: number | null };

/** What the board needs of the config: an agent's budget (CONTRACT §5 "Budgets"), to show a tree's spend against it. */
export type BudgetOf = (agentId: string) => { usd?: number; tokens?: number } | undefined;

/**
 * Newest first by an ISO timestamp: code-point order, which is time order for these strings. `localeCompare` would
 * give the same order through ICU's collator, whose first use blocks the event loop for 5–8 ms and maps 2.5 MB of
 * collation data into the process (BENCHMARKS.md, 'Stop 40'); each comparison after that is twice as slow.
 */
const newestFirst = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0);

const STATUSES = { needs: ['waiting_approval'], working: ['queued', 'running'], done: ['ok'], failed: ['error', 'interrupted'] } as const;
const PICK = ['runs.id', 'runs.session_key', 'runs.status', 'runs.created_at', 'runs.started_at', 'runs.ended_at', 'runs.origin'] as const;

/**
 * The board in two rounds of statements (issue 22 item 7): first every read that needs nothing from another — the runs
 * of each status, the pending approvals with their runs, the dead deliveries — at once; then the parent chains of all
 * of them (one recursive statement) and, with budgets, the trees' spend. Each run's cost comes with its row.
 */
export async function runsBoard(store: Store, p: { limit?: number }, budgetOf?: BudgetOf): Promise<Board> {
  const limit = p.limit ?? 50;
  const db = store.db;
  const cost = (eb: ExpressionBuilder<Database, 'runs'>) =>
    eb.selectFrom('model_usage').select((m) => m.fn.sum<number>('model_usage.cost_usd').as('c')).whereRef('model_usage.run_id', '=', 'runs.id').as('cost');
  // The newest n runs of each status in one statement: a `union all` of one indexed read per status (`status in (a, b)
  // order by created_at desc` cannot walk runs_status in order, so PostgreSQL fetched and sorted every failed run — 617 ms
  // over 14,000 of them; `status = a` stops after n rows).
  // A deleted session's runs (under its archive key, which no request can name) are left out: a filter on rows the
  // index walk reads anyway, past a deleted session's newest runs, no more (no index of its own; BENCHMARKS "board open").
  const newestOf = (want: Array<[string, number]>) => {
    const [first, ...rest] = want.map(([st, n]) => db.selectFrom(db.selectFrom('runs').select([...PICK, cost]).where('runs.status', '=', st).where('runs.session_key', 'not like', ARCHIVE_KEY_LIKE).orderBy('runs.created_at', 'desc').limit(n).as('r')).selectAll());
    return rest.reduce((q, part) => q.unionAll(part), first!).execute() as Promise<RunPick[]>;
  };
  const statuses = (n: number): Array<[string, number]> => Object.values(STATUSES).flatMap((list) => list.map((st): [string, number] => [st, n]));
  const [runs, pending, dead] = await Promise.all([
    newestOf(statuses(limit)),
    // Waiting on a person: a run marked so, or one with a pending approval (the mark follows the row by a statement).
    db
      .selectFrom('approvals')
      .innerJoin('runs', 'runs.id', 'approvals.run_id')
      .select(['approvals.id as approval_id', 'approvals.tool', 'approvals.call_id', ...PICK, cost])
      .where('approvals.status', '=', 'pending')
      .where('runs.session_key', 'not like', ARCHIVE_KEY_LIKE)
      .orderBy('approvals.requested_at', 'desc')
      .limit(limit * 4)
      .execute() as Promise<Array<RunPick & { approval_id: string; tool: string; call_id: string }>>,
    // Dead deliveries are failures too (CONTRACT §7): on the board under "Failed", with their id for Retry (not a
    // deleted session's).
    deadDeliveries(db, limit),
  ]);
  const waitingOn = new Map<string, { id: string; tool: string }>();
  for (const a of pending) if (!waitingOn.has(a.id)) waitingOn.set(a.id, { id: a.approval_id, tool: a.tool });
  const newest = (rows: RunPick[], list: readonly string[], n: number) => rows.filter((r) => list.includes(r.status)).sort((a, b) => newestFirst(a.created_at, b.created_at)).slice(0, n);
  const needs = new Map<string, RunPick>();
  for (const r of [...newest(runs, STATUSES.needs, limit), ...pending]) if (r.status === 'waiting_approval' || r.status === 'running' || r.status === 'queued') needs.set(r.id, r);
  // A tree past its budget waits on one item (CONTRACT §5), raised by whichever of its runs got there first: every
  // running run of that tree waits on it too (it stops before its next model step), so it needs input as well.
  const budgetWait = new Map<string, { id: string; tool: string }>();
  for (const a of pending) {
    const root = a.tool === 'budget' ? budgetRootOf(a.call_id) : undefined;
    if (root) budgetWait.set(root, { id: a.approval_id, tool: a.tool });
  }
  const waitsOnBudget = (r: RunPick) => {
    const item = budgetWait.size && r.status === 'running' ? budgetWait.get(treeRootOf(r)) : undefined;
    if (item && !waitingOn.has(r.id)) waitingOn.set(r.id, item);
    return !!item;
  };
  const notWaiting = (r: RunPick) => {
    if (needs.has(r.id)) return false;
    if (!waitsOnBudget(r)) return true;
    needs.set(r.id, r);
    return false;
  };
  let working = newest(runs, STATUSES.working, limit).filter(notWaiting);
  // Runs waiting on an approval leave "Working": read deeper only when they took places and there may be more.
  if (working.length < limit && needs.size && STATUSES.working.some((st) => runs.filter((r) => r.status === st).length === limit)) {
    working = newest(await newestOf(STATUSES.working.map((st): [string, number] => [st, limit + needs.size])), STATUSES.working, limit + needs.size).filter(notWaiting);
  }
  const groups = {
    needsInput: [...needs.values()].sort((a, b) => newestFirst(a.created_at, b.created_at)).slice(0, limit),
    working: working.slice(0, limit),
    done: newest(runs, STATUSES.done, limit),
    failed: newest(runs, STATUSES.failed, limit),
  };

  const all = [...groups.needsInput, ...groups.working, ...groups.done, ...groups.failed];
  const deadKey = (d: (typeof dead)[number]) => d.from_session ?? d.to_session ?? '';
  const [chains, budgets] = await Promise.all([parentChains(store, [...all.map((r) => r.session_key), ...dead.map(deadKey)]), treeBudgets(store, all, budgetOf)]);
  // A running run of a session above one waiting on a person, in the same request tree (the delegate is its own, or
  // its delegate's), waits on that delegate: the board says so (it stays under "Working": the item to answer is the
  // delegate's, under "Needs input"). Not a queued run, nor another tree's run of that session (probe K).
  const delegateWaits = new Map<string, string>();
  for (const r of groups.needsInput) {
    const root = treeRootOf(r);
    for (const key of chains.get(r.session_key) ?? []) if (key !== r.session_key && !delegateWaits.has(`${root} ${key}`)) delegateWaits.set(`${root} ${key}`, r.session_key);
  }
  // A live session's chain from its newest deleted ancestor down (a delegate outlives a deleted parent): no archive key.
  const chainOf = (key: string) => {
    const chain = chains.get(key) ?? [key];
    const cut = chain.findLastIndex(isArchiveKey);
    return cut < 0 ? chain : chain.slice(cut + 1);
  };
  const item = (r: RunPick): BoardItem => {
    const wait = waitingOn.get(r.id);
    const delegate = delegateWaits.size && !needs.has(r.id) && r.status === 'running' ? delegateWaits.get(`${treeRootOf(r)} ${r.session_key}`) : undefined;
    return {
      runId: r.id,
      sessionKey: r.session_key,
      agentId: agentIdOf(r.session_key) ?? '',
      parentChain: chainOf(r.session_key),
      // Waiting on an item: said as such even before its row is marked (a tool call's mark follows by a statement; a
      // tree's budget wait marks none).
      status: needs.has(r.id) && r.status === 'running' ? 'waiting_approval' : r.status,
      ...(needs.has(r.id) ? { waitingFor: 'approval', ...(wait ? { approvalId: wait.id, tool: wait.tool } : {}) } : {}),
      ...(delegate ? { waitingFor: 'delegate', delegateSessionKey: delegate } : {}),
      startedAt: r.started_at ?? r.created_at,
      ...(r.ended_at ? { endedAt: r.ended_at } : {}),
      costUsd: Math.round(Number(r.cost ?? 0) * 1e6) / 1e6,
      ...(budgets.has(r.id) ? { budget: budgets.get(r.id)! } : {}),
    };
  };
  const deadItems: BoardItem[] = dead.map((d) => {
    const key = deadKey(d);
    return {
      runId: d.run_id ?? d.from_run ?? d.id,
      sessionKey: key,
      agentId: agentIdOf(key) ?? '',
      parentChain: key ? chainOf(key) : [key],
      status: 'dead',
      startedAt: d.created_at,
      endedAt: d.updated_at,
      costUsd: 0,
      delivery: { deliveryId: d.id, kind: d.kind, to: d.to_url ?? d.to_target ?? d.to_session ?? '', attempts: Number(d.attempts), ...(d.error_message ? { error: d.error_message } : {}) },
    };
  });
  const failedItems = [...groups.failed.map(item), ...deadItems].sort((a, b) => newestFirst(a.endedAt ?? a.startedAt, b.endedAt ?? b.startedAt)).slice(0, limit);
  // Each group newest first by the start it shows: a group's page is its newest runs by creation (the indexes' order),
  // and a follow-up queued behind a long run starts after runs created later.
  const byStart = (items: BoardItem[]) => items.sort((a, b) => newestFirst(a.startedAt, b.startedAt));
  return { needsInput: byStart(groups.needsInput.map(item)), working: byStart(groups.working.map(item)), done: byStart(groups.done.map(item)), failed: failedItems };
}

const treeRootOf = (r: RunPick) => treeOfRow(r).root;

/** Each run's request tree spend against its root agent's cap, for the runs whose tree has a budget. */
async function treeBudgets(store: Store, runs: RunPick[], budgetOf?: BudgetOf): Promise<Map<string, NonNullable<BoardItem['budget']>>> {
  const out = new Map<string, NonNullable<BoardItem['budget']>>();
  if (!budgetOf) return out;
  const treeOf = new Map<string, { root: string; cap: { usd?: number; tokens?: number } }>();
  for (const r of runs) {
    const { root, agentId } = treeOfRow(r);
    const cap = budgetOf(agentId);
    if (cap && (cap.usd !== undefined || cap.tokens !== undefined)) treeOf.set(r.id, { root, cap });
  }
  if (!treeOf.size) return out;
  const roots = [...new Set([...treeOf.values()].map((t) => t.root))];
  const [rows, items] = await Promise.all([
    store.db
      .selectFrom('model_usage')
      .select((eb) => ['root_run_id', eb.fn.sum<number>('cost_usd').as('usd'), eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o')])
      .where('root_run_id', 'in', roots)
      .groupBy('root_run_id')
      .execute(),
    // Each "Allow once" lets the tree spend one more cap (CONTRACT §5): the cap it is held to now is the agent's times
    // the caps its items granted, as the budget's own check reckons it (capsGranted).
    store.db
      .selectFrom('approvals')
      .select(['call_id', 'decision', 'status'])
      .where('kind', '=', 'budget')
      .where((eb) => eb.or(roots.map((r) => eb('call_id', 'like', `budget:${r}:%`))))
      .execute(),
  ]);
  const spent = new Map(rows.map((r) => [r.root_run_id as string, { usd: Number(r.usd ?? 0), tokens: Number(r.i ?? 0) + Number(r.o ?? 0) }]));
  const itemsOf = new Map<string, typeof items>();
  for (const a of items) {
    const root = budgetRootOf(a.call_id);
    if (root) itemsOf.set(root, [...(itemsOf.get(root) ?? []), a]);
  }
  for (const [runId, t] of treeOf) {
    const s = spent.get(t.root) ?? { usd: 0, tokens: 0 };
    // Allowed for good (null): no cap holds the tree any more.
    const n = capsGranted(itemsOf.get(t.root) ?? []);
    const cap = (c: number | undefined) => (c === undefined || n === null ? null : c * n);
    out.set(runId, { rootRunId: t.root, spentUsd: Math.round(s.usd * 1e6) / 1e6, capUsd: cap(t.cap.usd), spentTokens: s.tokens, capTokens: cap(t.cap.tokens) });
  }
  return out;
}
