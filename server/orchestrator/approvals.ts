// Approval gate: per-agent tool policy (auto | ask | deny), session allow-always rules, durable pending approvals.
import crypto from 'node:crypto';
import type { AgentConfig } from '../config';
import { CrosstalkError, withArticle } from '../errors';
import { checkElicitAnswer, type ElicitSchema } from '../mcp/elicit-content';
import { OAUTH_RUN_PREFIX } from '../mcp/oauth-run';
import type { EventBus } from '../events/bus';
import type { ApprovalRecord, DecidedBy, Decision, ElicitDecision, PendingApproval, Trust } from '../events/types';
import { policyFor, toolRuleName } from '../trust/policy';
import { describeTrust, OPERATOR } from '../trust/trust';
import type { Metrics } from '../metrics';
import type { ApprovalRow } from '../store/schema';
import { nowIso, type Store } from '../store/store';
import type { Reviewer, ReviewVerdict } from './reviewer';

/**
 * `waited`: a person was asked (the call paused on an approval). `decided`: who decided it and why, when someone did
 * (a person, a chat approver, the reviewer, an `allow_always` rule); the tool card shows it.
 */
export type GateResult = ({ allowed: true } | { allowed: false; reason: string }) & { waited?: boolean; decided?: DecisionNote };
export interface DecisionNote {
  approvalId: string;
  decision: string;
  by: DecidedBy;
  reason?: string;
}
export type { Decision, ElicitDecision };
const ELICIT_DECISIONS: readonly string[] = ['accept', 'decline', 'cancel'];
export type { DecidedBy };
/** The reason an `allow_always` rule's own entry carries in the record. */
export const RULE_REASON = 'allowed by an allow_always rule of this session';

export interface GateRequest {
  runId: string;
  sessionKey: string;
  agent: AgentConfig;
  callId: string;
  tool: string;
  args: unknown;
  signal: AbortSignal;
  /** Shown on the approval card (an MCP tool's server, tool and annotations); never used for the decision. */
  source?: Record<string, unknown>;
  /** The run's trust (CONTRACT §5 "Trust"); the operator's when absent. */
  trust?: Trust;
  /** The reviewer's escalation, shown with the pending item. */
  review?: ReviewVerdict;
}

export function toPendingApproval(r: ApprovalRow): PendingApproval {
  const kind = (r.kind ?? 'tool') as PendingApproval['kind'];
  const args = JSON.parse(r.args) as Record<string, unknown>;
  const base: PendingApproval = { approvalId: r.id, kind, sessionKey: r.session_key, runId: r.run_id, callId: r.call_id, tool: r.tool, args, requestedAt: r.requested_at, trust: trustOfRow(r) };
  if (kind !== 'elicitation' && kind !== 'authorization') return base;
  // An elicitation (and an MCP server's authorization: a URL to open) shows what the server asks at the top level (CONTRACT §5 "MCP elicitation").
  const { server, message, mode, requestedSchema, url } = args as { server: string; message: string; mode: 'form' | 'url'; requestedSchema?: Record<string, unknown>; url?: string };
  return { ...base, server, message, mode, ...(requestedSchema ? { requestedSchema } : {}), ...(url ? { url } : {}) };
}

/**
 * Whether a pending item outlives its process: a tool or budget item waits for its decision across a restart; an MCP
 * elicitation dies with the request that raised it (the re-drive of its call closes it, `interrupted`), and so does an
 * MCP server's authorization (its PKCE flow was the process's; the server asks again).
 */
export const survivesRestart = (r: Pick<ApprovalRow, 'kind'>): boolean => r.kind !== 'elicitation' && r.kind !== 'authorization';

export const trustOfRow = (r: Pick<ApprovalRow, 'trust'>): Trust => (r.trust ? (JSON.parse(r.trust) as Trust) : OPERATOR);

export const decidedByOfRow = (r: Pick<ApprovalRow, 'decided_by'>): DecidedBy | undefined => (r.decided_by ? (JSON.parse(r.decided_by) as DecidedBy) : undefined);

/**
 * The decision a settled row's `resolved` event says: its stored one, or `cancel` for an item closed by its run's end
 * (rows of earlier versions kept none), so every kind spells a cancel one way (CONTRACT §3's `cancel`).
 */
export const decisionOfRow = (r: Pick<ApprovalRow, 'decision' | 'status'>): string => r.decision ?? (r.status === 'cancelled' ? 'cancel' : r.status);

/** A settled row's `approval` `resolved` event data, wherever it is said (here, or by the process driving the run). */
export const resolvedData = (row: Pick<ApprovalRow, 'id' | 'decision' | 'status' | 'reason'>, by?: DecidedBy) => ({
  phase: 'resolved',
  approvalId: row.id,
  decision: decisionOfRow(row),
  ...(row.reason ? { reason: row.reason } : {}),
  ...(by ? { by } : {}),
});

/** A decided row as `approvals.history` returns it (CONTRACT §3). */
export function toApprovalRecord(r: ApprovalRow): ApprovalRecord {
  return {
    approvalId: r.id,
    sessionKey: r.session_key,
    runId: r.run_id,
    kind: (r.kind ?? 'tool') as ApprovalRecord['kind'],
    tool: r.tool,
    decision: decisionOfRow(r),
    decidedBy: decidedByOfRow(r) ?? { type: 'user' },
    ...(r.reason ? { reason: r.reason } : {}),
    requestedAt: r.requested_at,
    decidedAt: r.resolved_at ?? r.requested_at,
  };
}

const noteOf = (r: ApprovalRow): DecisionNote | undefined => {
  const by = decidedByOfRow(r);
  return by && r.decision ? { approvalId: r.id, decision: r.decision, by, ...(r.reason ? { reason: r.reason } : {}) } : undefined;
};

// Approval ids sort in request order (time, then a process counter), so "oldest first" is exact within a millisecond.
let seq = 0;
export function newApprovalId(): string {
  seq = (seq + 1) % 36 ** 4;
  return `apr_${Date.now().toString(36).padStart(9, '0')}${seq.toString(36).padStart(4, '0')}_${crypto.randomBytes(6).toString('hex')}`;
}

/** A new pending item's row — a gated tool call, a budget, an elicitation: one shape, its id in request order. */
export function pendingRow(o: { sessionKey: string; runId: string; callId: string; tool: string; args: unknown; kind: string; trust?: string | null }): ApprovalRow {
  return {
    id: newApprovalId(),
    session_key: o.sessionKey,
    run_id: o.runId,
    call_id: o.callId,
    tool: o.tool,
    args: JSON.stringify(o.args ?? null),
    status: 'pending',
    decision: null,
    reason: null,
    requested_at: nowIso(),
    resolved_at: null,
    trust: o.trust ?? null,
    kind: o.kind,
    response: null,
    decided_by: null,
    decided_by_type: null,
    review: null,
  };
}

function decisionOf(row: ApprovalRow): GateResult {
  const note = noteOf(row);
  const decided = note ? { decided: note } : {};
  if (row.status === 'allowed') return { allowed: true, ...decided };
  return { allowed: false, reason: row.reason || (row.status === 'cancelled' ? 'approval cancelled' : 'denied by user'), ...decided };
}

export class Approvals {
  private waiters = new Map<string, (r: GateResult) => void>();
  /** Told when a run starts waiting for a decision here (a stopping process hands such a run over at once). */
  onWait: ((runId: string) => void) | null = null;
  /** Runs waiting here for a decision now. */
  readonly waiting = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly metrics: Metrics,
    /** Called with a settled approval whose run is not waiting in this process (paused before a restart, or elsewhere). */
    private readonly elsewhere: (row: ApprovalRow, by?: DecidedBy) => Promise<void>,
    /** The agents' reviewer model (CONTRACT §5 "Reviewer"); asked before the person for an agent that has one. */
    private readonly reviewer?: Reviewer,
  ) {}

  async gate(q: GateRequest): Promise<GateResult> {
    const requestedAt = nowIso(); // the call's time: a reviewer's verdict comes later
    const trust = q.trust ?? OPERATOR;
    const policy = policyFor(q.agent, q.tool, trust);
    if (policy === 'deny') return { allowed: false, reason: trust.kind === 'operator' ? `tool policy denies ${q.tool}` : `tool policy for ${describeTrust(trust)} denies ${q.tool}` };
    if (policy === 'auto') return { allowed: true };
    let row = await this.store.approvalForCall(q.runId, q.callId);
    if (row && row.status !== 'pending') return decisionOf(row);
    // An `allow_always` rule allows the call: an entry of its own in the record (CONTRACT §5), decided by the rule.
    if (!row && (await this.store.hasToolRule(q.sessionKey, toolRuleName(q.tool, trust)))) return this.settledHere(q, trust, 'allowed', 'allow_always', RULE_REASON, { type: 'rule' }, requestedAt);
    if (!row && this.reviewer && q.agent.reviewer) {
      const verdict = await this.reviewer({ agent: q.agent, sessionKey: q.sessionKey, tool: q.tool, args: q.args, trust, signal: q.signal });
      const by: DecidedBy = { type: 'reviewer', id: q.agent.reviewer.model };
      // The reviewer's allow is one call's (`allow_once`); it never adds a rule.
      if (verdict.decision === 'allow') return this.settledHere(q, trust, 'allowed', 'allow_once', verdict.reason, by, requestedAt);
      if (verdict.decision === 'deny') return this.settledHere(q, trust, 'denied', 'deny', verdict.reason, by, requestedAt);
      q = { ...q, review: verdict };
    }
    if (!row) {
      row = {
        id: newApprovalId(),
        session_key: q.sessionKey,
        run_id: q.runId,
        call_id: q.callId,
        tool: q.tool,
        args: JSON.stringify(q.args ?? null),
        status: 'pending',
        decision: null,
        reason: null,
        requested_at: requestedAt,
        resolved_at: null,
        trust: JSON.stringify(trust),
        kind: 'tool',
        response: null,
        decided_by: null,
        decided_by_type: null,
        review: q.review ? (q.review.cause === 'streak' ? 'streak' : 'escalate') : null,
      };
      const stored = await this.store.insertApproval(row);
      row = stored.row;
      if (!stored.inserted && row.status !== 'pending') return decisionOf(row);
      if (stored.inserted)
        this.bus.emit(q.runId, 'approval', { phase: 'requested', approvalId: row.id, kind: 'tool', tool: q.tool, args: q.args ?? null, callId: q.callId, requestedAt: row.requested_at, trust, ...(q.source ? { source: q.source } : {}), ...(q.review ? { review: { decision: q.review.decision, reason: q.review.reason } } : {}) });
    }
    const approvalId = row.id;
    const decided = new Promise<GateResult>((resolve, reject) => {
      const onAbort = () => {
        this.waiters.delete(approvalId);
        // A graceful stop leaves the approval pending: the run is re-driven later and waits for it again.
        if (q.signal.reason === Symbol.for('crosstalk.shutdown')) return resolve({ allowed: false, reason: 'stopping' });
        // The gate answers once the cancel is stored and said on the run's stream: answered first, the run could end
        // (and leave the bus) before the event, which then had no run to go to (an unhandled rejection).
        void this.store
          .settleApproval(approvalId, 'cancelled', 'cancel', 'run interrupted')
          .then((settled) => {
            if (settled) this.bus.emit(q.runId, 'approval', { phase: 'resolved', approvalId, decision: 'cancel', reason: 'run interrupted' });
          })
          .catch(() => undefined)
          .finally(() => resolve({ allowed: false, reason: 'run interrupted' }));
      };
      if (q.signal.aborted) return onAbort();
      q.signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(approvalId, (r) => {
        this.waiters.delete(approvalId);
        q.signal.removeEventListener('abort', onAbort);
        resolve(r);
      });
    });
    // A decision may have landed while the waiter was not registered yet: read it back once.
    const fresh = await this.store.getApproval(approvalId);
    let waiting = false;
    if (fresh && fresh.status !== 'pending') this.waiters.get(approvalId)?.(decisionOf(fresh));
    else {
      await this.store.updateRunFenced(q.runId, q.sessionKey, { status: 'waiting_approval' });
      waiting = this.waiters.has(approvalId);
    }
    if (waiting) {
      this.waiting.add(q.runId);
      void decided.finally(() => this.waiting.delete(q.runId));
      this.onWait?.(q.runId);
    }
    const result = await decided;
    if (!q.signal.aborted) await this.store.updateRunFenced(q.runId, q.sessionKey, { status: 'running' });
    return { ...result, waited: true };
  }

  /** The one way an item is decided: every caller says who it is (`by`: the room, JSON-RPC, chat, push …), kept in the record. */
  async resolve(approvalId: string, decision: Decision | ElicitDecision, reason: string | undefined, by: DecidedBy, content?: unknown): Promise<void> {
    const row = await this.store.getApproval(approvalId);
    if (!row) throw new CrosstalkError('unknown_approval', `no approval ${approvalId}`);
    const kind = row.kind ?? 'tool';
    if (row.status !== 'pending') throw new CrosstalkError('already_resolved', `approval ${approvalId} is already ${row.status}`);
    const answers = kind === 'elicitation' || kind === 'authorization';
    if (answers !== ELICIT_DECISIONS.includes(decision))
      throw new CrosstalkError('invalid_request', `${withArticle(kind)} item is answered with ${answers ? 'accept, decline or cancel' : 'allow_once, allow_always or deny'}`, [{ path: 'decision', message: `does not answer ${withArticle(kind)} item` }]);
    // An accepted form is checked against the server's schema, its omitted fields filled from the schema's defaults.
    let response: string | null = null;
    if (kind === 'elicitation' && decision === 'accept') {
      const args = JSON.parse(row.args) as { mode?: string; requestedSchema?: ElicitSchema };
      if (args.mode !== 'url') {
        const checked = await checkElicitAnswer(args.requestedSchema, content);
        if (!checked.ok) throw new CrosstalkError('invalid_request', `content does not fit the requested schema: ${checked.issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, checked.issues);
        response = JSON.stringify(checked.content);
      } else if (content !== undefined && content !== null)
        // A url step is done in the browser: the server gets no content, so none given is silently dropped.
        throw new CrosstalkError('invalid_request', 'a url elicitation is accepted without content: the step is done at its url', [{ path: 'content', message: 'not expected for a url elicitation' }]);
    } else if (content !== undefined) throw new CrosstalkError('invalid_request', 'content goes only with accept of an elicitation form', [{ path: 'content', message: 'not expected here' }]);
    const status = decision === 'deny' || decision === 'decline' ? 'denied' : decision === 'cancel' ? 'cancelled' : 'allowed';
    const settled = await this.store.settleApproval(approvalId, status, decision, reason ?? null, response, by);
    if (!settled) throw new CrosstalkError('already_resolved', `approval ${approvalId} was resolved meanwhile`);
    // (A budget item's allow_always lifts the tree's cap: budget.ts reads the decision; no tool rule.)
    if (decision === 'allow_always' && (row.kind ?? 'tool') === 'tool') await this.store.addToolRule(row.session_key, toolRuleName(row.tool, trustOfRow(row)));
    this.metrics.approvalWait.observe((Date.now() - Date.parse(row.requested_at)) / 1000);
    await this.deliver(approvalId, by);
  }

  /**
   * Hands a settled decision to the run waiting for it: in this process, or wherever it runs (`elsewhere`). Who
   * decided (`by`, a chat sender) travels with it, so no per-approval state is kept here for a run elsewhere.
   */
  async deliver(approvalId: string, by?: DecidedBy): Promise<void> {
    const row = await this.store.getApproval(approvalId);
    if (!row || row.status === 'pending') return;
    let waiter = this.waiters.get(approvalId);
    // A run waiting here whose session's lease this process has lost (declared dead, not told yet) must not run the
    // tool: the decision goes to whoever holds the lease now (the re-driver), as for a run waiting elsewhere.
    if (waiter && !(await this.store.holdsLease(row.session_key))) waiter = undefined;
    // The run may have stopped waiting during that look (cancelled, or stopped and re-driven): its abort answered the
    // gate, and the run may have left the bus. The decision then goes where the run is now, as for a run elsewhere.
    if (waiter && this.waiters.get(approvalId) !== waiter) waiter = undefined;
    // A run that left the bus with its gate still registered (dropped when a parallel call lost the database): its
    // copy here is gone; the decision goes where the run is driven now (before, its event threw: `internal`).
    if (waiter && !this.bus.has(row.run_id)) waiter = undefined;
    by ??= decidedByOfRow(row);
    // An MCP server's authorization raised outside any tool call has a run id of its own (no such run): its waiter reads
    // the store, only the event is due.
    if (!waiter && row.kind === 'authorization' && row.run_id.startsWith(OAUTH_RUN_PREFIX)) {
      return this.bus.emitOnLog(row.run_id, row.session_key, 'approval', resolvedData(row, by), () => this.store.maxSeq(row.run_id));
    }
    if (!waiter) return this.elsewhere(row, by); // the run keeps its bus registration (and seq) for the resume
    const data = resolvedData(row, by);
    this.bus.emit(row.run_id, 'approval', data);
    const note = noteOf(row);
    waiter({ ...(data.decision === 'deny' ? { allowed: false as const, reason: row.reason || 'denied by user' } : { allowed: true as const }), ...(note ? { decided: note } : {}) });
  }

  /**
   * A call decided without asking a person (a rule, the reviewer): its entry is written already settled, and the
   * `approval` `resolved` event says who decided. A re-driven call finds the entry and keeps its decision.
   */
  private async settledHere(q: GateRequest, trust: Trust, status: 'allowed' | 'denied', decision: Decision, reason: string, by: DecidedBy, requestedAt: string): Promise<GateResult> {
    const stored = await this.store.insertApproval({
      ...pendingRow({ sessionKey: q.sessionKey, runId: q.runId, callId: q.callId, tool: q.tool, args: q.args, kind: 'tool', trust: JSON.stringify(trust) }),
      requested_at: requestedAt, // when the call was made; decided after (it was stamped after the decision before)
      status,
      decision,
      reason,
      resolved_at: nowIso(),
      decided_by: JSON.stringify(by),
      decided_by_type: by.type,
    });
    const row = stored.row;
    if (!stored.inserted) return decisionOf(row);
    this.bus.emit(q.runId, 'approval', { phase: 'resolved', approvalId: row.id, callId: q.callId, tool: q.tool, decision, reason, by });
    return decisionOf(row);
  }
}
