// Budgets (CONTRACT §5): a request tree — a run started from outside and everything it starts (delegates, sends,
// callbacks) — spends against its root agent's cap; past it, each run of the tree waits before its next model step on
// one pending `budget` item per tree. allow_once grants one more cap; deny ends the tree's runs `budget_exceeded`.
import { sql } from 'kysely';
import type { AgentConfig } from '../config';
import { CrosstalkError } from '../errors';
import type { EventBus } from '../events/bus';
import { agentIdOf } from '../sessions/keys';
import type { Store } from '../store/store';
import { pendingRow } from './approvals';
import { trustOf } from '../trust/trust';

/** A run's request tree: its root run and the agent whose budget applies. */
export interface TreeRef {
  root: string;
  agentId: string;
}

/** The tree a run belongs to: the one its origin carries, else its own (a run started from outside is a root). */
export function treeOf(run: { id: string; agent: { id: string }; origin?: unknown }): TreeRef {
  const t = (run.origin as { tree?: { root?: unknown; agentId?: unknown } } | undefined)?.tree;
  if (t && typeof t.root === 'string' && typeof t.agentId === 'string') return { root: t.root, agentId: t.agentId };
  return { root: run.id, agentId: run.agent.id };
}

/** A stored run's request tree, from its row's origin (unreadable: a tree of its own). */
export function treeOfRow(r: { id: string; session_key: string; origin: string | null }): TreeRef {
  let origin: unknown;
  try {
    origin = r.origin ? JSON.parse(r.origin) : undefined;
  } catch {
    origin = undefined;
  }
  return treeOf({ id: r.id, agent: { id: agentIdOf(r.session_key) ?? '' }, origin });
}

/** What a run adds to the origin of a run it starts, so the started run spends from the same tree. */
export function carryTree(run: { id: string; agent: { id: string }; origin?: unknown }): { tree: TreeRef } {
  return { tree: treeOf(run) };
}

/** A tree's budget item's call id: one per allowance (`times` caps granted), so each pause is an item of its own. */
export const budgetCallId = (root: string, times: number) => `budget:${root}:${times}`;
/** The tree root a budget item's call id names, an item raised again (`…:again<n>`) too (undefined: not a budget item's). */
export function budgetRootOf(callId: string): string | undefined {
  const m = /^budget:(.+?):\d+(?::again\d+)?$/.exec(callId);
  return m?.[1];
}

/** The caps a tree's budget items have granted: 1, plus one per allowed item; `null` when an allow_always lifted it. */
export function capsGranted(items: ReadonlyArray<{ decision: string | null; status: string }>): number | null {
  return items.some((r) => r.decision === 'allow_always') ? null : 1 + items.filter((r) => r.status === 'allowed').length;
}

export interface BudgetArgs {
  spentUsd: number;
  capUsd: number | null;
  spentTokens: number;
  capTokens: number | null;
  rootRunId: string;
}

const POLL_MS = 250;

export class Budgets {
  constructor(
    private readonly d: { store: Store; bus: EventBus; agent(id: string): AgentConfig | undefined },
  ) {}

  /** What the tree has spent: every model step recorded under its root, in every process. */
  async spent(root: string): Promise<{ usd: number; tokens: number }> {
    const r = await this.d.store.db
      .selectFrom('model_usage')
      .select((eb) => [eb.fn.sum<number>('cost_usd').as('c'), eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o')])
      .where('root_run_id', '=', root)
      .executeTakeFirst();
    return { usd: Number(r?.c ?? 0), tokens: Number(r?.i ?? 0) + Number(r?.o ?? 0) };
  }

  /**
   * Where the tree stands, from its budget items (one read): `denied` once one was denied; the caps granted so far (1,
   * plus one per allowed item; `null` when an allow_always lifted it); and per allowance the items closed `cancel`.
   */
  private async standing(root: string): Promise<{ denied: boolean; times: number | null; closed: (times: number) => number }> {
    const rows = await this.d.store.db.selectFrom('approvals').select(['call_id', 'decision', 'status']).where('kind', '=', 'budget').where('call_id', 'like', `budget:${root}:%`).execute();
    const times = capsGranted(rows);
    const closed = (t: number) => rows.filter((r) => r.status === 'cancelled' && (r.call_id === budgetCallId(root, t) || r.call_id.startsWith(`${budgetCallId(root, t)}:again`))).length;
    return { denied: rows.some((r) => r.status === 'denied'), times, closed };
  }

  /**
   * Before a model step: returns at once while the tree is under its cap; past it, raises (or joins) the tree's
   * pending item and waits for it. Throws `budget_exceeded` when it is denied (or was: the tree stays stopped).
   */
  async beforeStep(run: { id: string; sessionKey: string; agent: AgentConfig; origin?: unknown }, signal: AbortSignal): Promise<void> {
    const tree = treeOf(run);
    const cap = this.d.agent(tree.agentId)?.budget;
    if (!cap) return;
    for (;;) {
      const { denied, times, closed } = await this.standing(tree.root);
      if (denied) throw new CrosstalkError('budget_exceeded', 'budget_exceeded'); // agent.wait's `error`, as `cancelled` is
      if (times === null) return;
      const spent = await this.spent(tree.root);
      const over = (cap.usd !== undefined && spent.usd > cap.usd * times) || (cap.tokens !== undefined && spent.tokens > cap.tokens * times);
      if (!over) return;
      const args: BudgetArgs = { spentUsd: Math.round(spent.usd * 1e6) / 1e6, capUsd: cap.usd !== undefined ? cap.usd * times : null, spentTokens: spent.tokens, capTokens: cap.tokens !== undefined ? cap.tokens * times : null, rootRunId: tree.root };
      // An item of this allowance closed `cancel` (no run of the tree was left to wait on it) answers nothing: a run
      // of the tree that comes later asks again, under a call id of its own (the first's would be found closed, and
      // the loop would go round without waiting).
      const n = closed(times);
      const id = await this.raise(run, budgetCallId(tree.root, times) + (n ? `:again${n}` : ''), args);
      await this.settled(id, signal);
    }
  }

  /** The tree's pending item for this allowance: inserted by the first run that gets here, joined by the rest. */
  private async raise(run: { id: string; sessionKey: string; origin?: unknown }, callId: string, args: BudgetArgs): Promise<string> {
    // The item carries the trust of the run that reached the cap (a tree started from a chat carries its sender's):
    // the sender whose message started the tree may not lift its cap from the chat (CONTRACT §5, README "Approvals in chat").
    const row = pendingRow({ sessionKey: run.sessionKey, runId: run.id, callId, tool: 'budget', args, kind: 'budget', trust: JSON.stringify(trustOf(run.origin)) });
    const inserted = await this.d.store.db
      .insertInto('approvals')
      .values(row)
      .onConflict((oc) => oc.column('call_id').where('kind', '=', sql.lit('budget')).doNothing()) // a literal: the partial index's predicate must match as written
      .returning('id')
      .executeTakeFirst();
    if (inserted) {
      this.d.bus.emit(run.id, 'approval', { phase: 'requested', approvalId: row.id, kind: 'budget', tool: 'budget', args, callId, requestedAt: row.requested_at, trust: trustOf(run.origin) });
      return row.id;
    }
    const existing = await this.d.store.db.selectFrom('approvals').select('id').where('kind', '=', 'budget').where('call_id', '=', callId).executeTakeFirstOrThrow();
    return existing.id;
  }

  /**
   * After a run of a capped tree ended (its end committed): the tree's pending item is closed `cancel` once no run of
   * the tree is left to wait on it (its root cancelled with the delegate that held the item, say). Listed as pending,
   * it had no one to answer and counted as pending in `status`. Each end commits before it looks, so the tree's last
   * end always sees the others ended; two ends that both close it settle it once.
   */
  async treeEnded(run: { id: string; agent: { id: string }; origin?: unknown }): Promise<void> {
    const tree = treeOf(run);
    if (!this.d.agent(tree.agentId)?.budget) return;
    const items = await this.d.store.db.selectFrom('approvals').select(['id', 'run_id', 'session_key']).where('kind', '=', 'budget').where('status', '=', 'pending').where('call_id', 'like', `budget:${tree.root}:%`).execute();
    if (!items.length) return;
    const live = await this.d.store.db.selectFrom('runs').select(['id', 'session_key', 'origin']).where('status', 'in', ['queued', 'running', 'waiting_approval']).execute();
    if (live.some((r) => treeOfRow(r).root === tree.root)) return;
    const reason = 'no run of the tree is left';
    for (const it of items) {
      if (!(await this.d.store.settleApproval(it.id, 'cancelled', 'cancel', reason))) continue;
      // The run that raised it has ended (and left the bus): its log takes the resolution, as an authorization's does.
      await this.d.bus.emitOnLog(it.run_id, it.session_key, 'approval', { phase: 'resolved', approvalId: it.id, decision: 'cancel', reason }, () => this.d.store.maxSeq(it.run_id));
    }
  }

  /** Waits until the item is decided (any process may decide it), or the run is aborted. */
  private async settled(id: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new CrosstalkError('interrupted', 'run interrupted while waiting on its budget');
      const row = await this.d.store.getApproval(id);
      if (!row || row.status !== 'pending') return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, POLL_MS);
        function done() {
          clearTimeout(t);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}
