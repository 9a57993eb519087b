// `runs.board` (CONTRACT §3, §7 "Agent board"): every session's and delegate's runs in four groups, newest first.
import type { Store } from '../store/store';
import { agentIdOf } from '../sessions/keys';
import { parentChains } from './room';
import type { Board, BoardItem } from './types';

export type { Board, BoardItem };

type RunPick = { id: string; session_key: string; status: string; created_at: string; started_at: string | null; ended_at: string | null };

const STATUSES = { working: ['queued', 'running'], done: ['ok'], failed: ['error', 'interrupted'] } as const;

export async function runsBoard(store: Store, p: { limit?: number }): Promise<Board> {
  const limit = p.limit ?? 50;
  const db = store.db;
  const pick = ['id', 'session_key', 'status', 'created_at', 'started_at', 'ended_at'] as const;
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
  const newest = (statuses: readonly string[], n: number) =>
    db.selectFrom('runs').select(pick).where('status', 'in', [...statuses]).orderBy('created_at', 'desc').limit(n).execute() as Promise<RunPick[]>;
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
    };
  };
  return { needsInput: groups.needsInput.map(item), working: groups.working.map(item), done: groups.done.map(item), failed: groups.failed.map(item) };
}
