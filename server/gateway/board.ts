// `runs.board` (CONTRACT §3, §7 "Agent board"): every session's and delegate's runs in four groups, newest first.
import type { Store } from '../store/store';
import { agentIdOf } from '../sessions/keys';
import { parentChains } from './room';
import { deadDeliveries } from '../store/deliveries';
import type { Board, BoardItem } from './types';

export type { Board, BoardItem };

type RunPick = { id: string; session_key: string; status: string; created_at: string; started_at: string | null; ended_at: string | null; origin: string | null };

/** What the board needs of the config: an agent's budget (CONTRACT §5 "Budgets"), to show a tree's spend against it. */
export type BudgetOf = (agentId: string) => { usd?: number; tokens?: number } | undefined;

const STATUSES = { working: ['queued', 'running'], done: ['ok'], failed: ['error', 'interrupted'] } as const;

export async function runsBoard(store: Store, p: { limit?: number }, budgetOf?: BudgetOf): Promise<Board> {
  const limit = p.limit ?? 50;
  const db = store.db;
  const pick = ['id', 'session_key', 'status', 'created_at', 'started_at', 'ended_at', 'origin'] as const;
  // Waiting on a person: a run marked so, or one with a pending approval (the mark follows the row by a statement).
  const pending = await db
    .selectFrom('approvals')
    .select(['id', 'run_id', 'tool', 'requested_at'])
    .where('status', '=', 'pending')
    .orderBy('requested_at', 'desc')
    .limit(limit * 4)
    .execute();
  const waitingOn = new Map<string, { id: string; tool: string }>();
  for (const a of pending) if (!waitingOn.has(a.run_id)) waitingOn.set(a.run_id, { id: a.id, tool: a.tool });
  // One indexed read per status, merged: `status in (a, b) order by created_at desc` cannot walk runs_status in order,
  // so PostgreSQL fetched and sorted every failed run (617 ms over 14,000 of them); `status = a` stops after n rows.
  const newest = async (statuses: readonly string[], n: number) => {
    const parts = await Promise.all(statuses.map((st) => db.selectFrom('runs').select(pick).where('status', '=', st).orderBy('created_at', 'desc').limit(n).execute() as Promise<RunPick[]>));
    return parts.flat().sort((a, b) => b.created_at.localeCompare(a.created_at)).slice(0, n);
  };
  const [marked, pendingRuns, working, done, failed] = await Promise.all([
    newest(['waiting_approval'], limit),
    waitingOn.size ? (db.selectFrom('runs').select(pick).where('id', 'in', [...waitingOn.keys()]).execute() as Promise<RunPick[]>) : Promise.resolve([] as RunPick[]),
    newest(STATUSES.working, limit + waitingOn.size),
    newest(STATUSES.done, limit),
    newest(STATUSES.failed, limit),
  ]);
  const needs = new Map<string, RunPick>();
  for (const r of [...marked, ...pendingRuns]) if (r.status === 'waiting_approval' || r.status === 'running' || r.status === 'queued') needs.set(r.id, r);
  const needsInput = [...needs.values()].sort((a, b) => b.created_at.localeCompare(a.created_at)).slice(0, limit);
  const groups = { needsInput, working: working.filter((r) => !needs.has(r.id)).slice(0, limit), done, failed };

  const all = [...groups.needsInput, ...groups.working, ...groups.done, ...groups.failed];
  const chains = await parentChains(store, all.map((r) => r.session_key));
  const costs = new Map<string, number>();
  if (all.length) {
    const rows = await db
      .selectFrom('model_usage')
      .select((eb) => ['run_id', eb.fn.sum<number>('cost_usd').as('c')])
      .where('run_id', 'in', all.map((r) => r.id))
      .groupBy('run_id')
      .execute();
    for (const r of rows) costs.set(r.run_id, Math.round(Number(r.c ?? 0) * 1e6) / 1e6);
  }
  const budgets = await treeBudgets(store, all, budgetOf);
  const item = (r: RunPick): BoardItem => {
    const wait = waitingOn.get(r.id);
    return {
      runId: r.id,
      sessionKey: r.session_key,
      agentId: agentIdOf(r.session_key) ?? '',
      parentChain: chains.get(r.session_key) ?? [r.session_key],
      status: r.status,
      ...(needs.has(r.id) ? { waitingFor: 'approval', ...(wait ? { approvalId: wait.id, tool: wait.tool } : {}) } : {}),
      startedAt: r.started_at ?? r.created_at,
      ...(r.ended_at ? { endedAt: r.ended_at } : {}),
      costUsd: costs.get(r.id) ?? 0,
      ...(budgets.has(r.id) ? { budget: budgets.get(r.id)! } : {}),
    };
  };
  // Dead deliveries are failures too (CONTRACT §7): on the board under "Failed", with their id for Retry.
  const dead = await deadDeliveries(db, limit);
  const deadChains = await parentChains(store, dead.map((d) => d.from_session ?? d.to_session ?? ''));
  const deadItems: BoardItem[] = dead.map((d) => {
    const key = d.from_session ?? d.to_session ?? '';
    return {
      runId: d.run_id ?? d.from_run ?? d.id,
      sessionKey: key,
      agentId: agentIdOf(key) ?? '',
      parentChain: deadChains.get(key) ?? [key],
      status: 'dead',
      startedAt: d.created_at,
      endedAt: d.updated_at,
      costUsd: 0,
      delivery: { deliveryId: d.id, kind: d.kind, to: d.to_url ?? d.to_target ?? d.to_session ?? '', attempts: Number(d.attempts), ...(d.error_message ? { error: d.error_message } : {}) },
    };
  });
  const failedItems = [...groups.failed.map(item), ...deadItems].sort((a, b) => (b.endedAt ?? b.startedAt).localeCompare(a.endedAt ?? a.startedAt)).slice(0, limit);
  return { needsInput: groups.needsInput.map(item), working: groups.working.map(item), done: groups.done.map(item), failed: failedItems };
}

/** Each run's request tree spend against its root agent's cap, for the runs whose tree has a budget. */
async function treeBudgets(store: Store, runs: RunPick[], budgetOf?: BudgetOf): Promise<Map<string, NonNullable<BoardItem['budget']>>> {
  const out = new Map<string, NonNullable<BoardItem['budget']>>();
  if (!budgetOf) return out;
  const treeOf = new Map<string, { root: string; cap: { usd?: number; tokens?: number } }>();
  for (const r of runs) {
    let tree: { root?: unknown; agentId?: unknown } | undefined;
    try {
      tree = r.origin ? (JSON.parse(r.origin) as { tree?: { root?: unknown; agentId?: unknown } }).tree : undefined;
    } catch {
      tree = undefined;
    }
    const root = typeof tree?.root === 'string' ? tree.root : r.id;
    const agentId = typeof tree?.agentId === 'string' ? tree.agentId : (agentIdOf(r.session_key) ?? '');
    const cap = budgetOf(agentId);
    if (cap && (cap.usd !== undefined || cap.tokens !== undefined)) treeOf.set(r.id, { root, cap });
  }
  if (!treeOf.size) return out;
  const roots = [...new Set([...treeOf.values()].map((t) => t.root))];
  const rows = await store.db
    .selectFrom('model_usage')
    .select((eb) => ['root_run_id', eb.fn.sum<number>('cost_usd').as('usd'), eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o')])
    .where('root_run_id', 'in', roots)
    .groupBy('root_run_id')
    .execute();
  const spent = new Map(rows.map((r) => [r.root_run_id as string, { usd: Number(r.usd ?? 0), tokens: Number(r.i ?? 0) + Number(r.o ?? 0) }]));
  for (const [runId, t] of treeOf) {
    const s = spent.get(t.root) ?? { usd: 0, tokens: 0 };
    out.set(runId, { rootRunId: t.root, spentUsd: Math.round(s.usd * 1e6) / 1e6, capUsd: t.cap.usd ?? null, spentTokens: s.tokens, capTokens: t.cap.tokens ?? null });
  }
  return out;
}
