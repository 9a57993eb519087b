// Approvals and tool rules in the store: one row per run and call, settled once from pending, the decision log
// (CONTRACT §3 `approvals.history`) and the reviewer's streak. FencedStore (fences.ts) builds on it.
import { sql } from 'kysely';
import type { DecidedBy } from '../events/types';
import type { ApprovalRow } from './schema';
import { MAX_TREE_DEPTH, nowIso, StoreBase } from './store-base';

export class ApprovalRecords extends StoreBase {
  // ── approvals ───────────────────────────────────────────────────────────

  /** Asks for a tool call's approval once: the stored row of that call (ours when `inserted`, else the first one's). */
  async insertApproval(a: Omit<ApprovalRow, 'trust' | 'kind' | 'response' | 'decided_by' | 'decided_by_type' | 'review'> & { trust?: string | null; kind?: string; decided_by?: string | null; decided_by_type?: string | null; review?: string | null }): Promise<{ row: ApprovalRow; inserted: boolean }> {
    const r = await this.db.insertInto('approvals').values(a).onConflict((oc) => oc.columns(['run_id', 'call_id']).doNothing()).returning('id').executeTakeFirst();
    const row = r ? undefined : await this.approvalForCall(a.run_id, a.call_id);
    return row ? { row, inserted: false } : { row: { trust: null, kind: 'tool', response: null, decided_by: null, decided_by_type: null, review: null, ...a } as ApprovalRow, inserted: true };
  }

  getApproval(id: string): Promise<ApprovalRow | undefined> {
    return this.db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Settles a pending approval; false when it was not pending (already resolved or cancelled). */
  async settleApproval(id: string, status: string, decision: string | null, reason: string | null, response?: string | null, by?: DecidedBy): Promise<boolean> {
    const res = await this.db
      .updateTable('approvals')
      .set({ status, decision, reason, resolved_at: nowIso(), ...(response != null ? { response } : {}), ...(by ? { decided_by: JSON.stringify(by), decided_by_type: by.type } : {}) })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  approvalForCall(runId: string, callId: string): Promise<ApprovalRow | undefined> {
    return this.db.selectFrom('approvals').selectAll().where('run_id', '=', runId).where('call_id', '=', callId).executeTakeFirst();
  }

  /** Pending items, oldest first: of one session, one run, or (`under`) a session and every delegate below it. */
  pendingApprovals(o: { sessionKey?: string; runId?: string; under?: string } = {}): Promise<ApprovalRow[]> {
    let q = this.db.selectFrom('approvals').selectAll().where('status', '=', 'pending');
    if (o.sessionKey) q = q.where('session_key', '=', o.sessionKey);
    // The delegate tree walked down by sessions.parent_key (indexed); the depth bound ends a cycle in bad data.
    if (o.under)
      q = q.where(
        'session_key',
        'in',
        sql<string>`(with recursive tree(key, depth) as (select cast(${o.under} as text), 0 union select s.key, tree.depth + 1 from sessions s join tree on s.parent_key = tree.key where tree.depth < ${MAX_TREE_DEPTH}) select key from tree)`,
      );
    if (o.runId) q = q.where('run_id', '=', o.runId);
    return q.orderBy('requested_at').orderBy('id').limit(500).execute();
  }

  /**
   * Decided items, newest decision first (CONTRACT §3 `approvals.history`): after `before` (the last page's
   * `[decidedAt, id]`), `limit` of them. An item closed by its run's end (cancelled, an MCP elicitation whose call
   * died) was decided by no one: it has no `decided_by` and is left out.
   */
  approvalHistory(o: { sessionKey?: string; limit: number; before?: [string, string] }): Promise<ApprovalRow[]> {
    let q = this.db.selectFrom('approvals').selectAll().where('decided_by', 'is not', null).where('resolved_at', 'is not', null).where('status', '<>', 'pending');
    if (o.sessionKey) q = q.where('session_key', '=', o.sessionKey);
    if (o.before) {
      const [at, id] = o.before;
      q = q.where((eb) => eb.or([eb('resolved_at', '<', at), eb.and([eb('resolved_at', '=', at), eb('id', '<', id)])]));
    }
    return q.orderBy('resolved_at', 'desc').orderBy('id', 'desc').limit(o.limit).execute();
  }

  /**
   * The verdicts of a session's reviewer, newest call first (its streak of denials, CONTRACT §5 "Reviewer"): `allow_once`
   * or `deny` for a call it decided, `escalate` for one it handed to a person (which breaks a streak). Calls escalated
   * unseen because of a streak are not verdicts: the streak stays.
   */
  async reviewerDecisions(sessionKey: string, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('approvals')
      .select(['decision', 'review'])
      .where('session_key', '=', sessionKey)
      .where((eb) => eb.or([eb('decided_by_type', '=', 'reviewer'), eb('review', '=', 'escalate')]))
      .orderBy('requested_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => (r.review === 'escalate' ? 'escalate' : (r.decision ?? '')));
  }

  async addToolRule(sessionKey: string, tool: string): Promise<void> {
    await this.db
      .insertInto('session_tool_rules')
      .values({ session_key: sessionKey, tool, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['session_key', 'tool']).doNothing())
      .execute();
  }

  async hasToolRule(sessionKey: string, tool: string): Promise<boolean> {
    const r = await this.db
      .selectFrom('session_tool_rules')
      .select('tool')
      .where('session_key', '=', sessionKey)
      .where('tool', '=', tool)
      .executeTakeFirst();
    return !!r;
  }
}
