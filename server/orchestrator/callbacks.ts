// What a run owes when it ends (seed 000): callbacks to calling agent sessions and webhooks, planned as durable rows.
import type { CallbackRow, RunRow, WebhookRow } from '../store/schema';
import { nowIso } from '../store/store';
import { webhookRow } from '../webhooks/outbox';
import { trustOf, weakest } from '../trust/trust';
import type { RunOutcome } from './types';

/** Recorded on a run row when an agent session sent the message (sessions_send, agents_message, delegate). */
export interface MessageOrigin {
  from?: { sessionKey: string; runId?: string; agentId: string };
  /** The caller wants an `agent_callback_result` and a callback turn when this run ends. */
  callback?: boolean;
  [k: string]: unknown;
}

export interface Deliveries {
  callbacks: CallbackRow[];
  webhooks: WebhookRow[];
  /** Callers that asked for a callback of a run that failed: no callback (seed decision), an event instead. */
  failed: Array<{ callerSessionKey: string; requestRunId: string }>;
}

export function planDeliveries(target: { runId: string; sessionKey: string; agentId: string; agentName: string }, rows: RunRow[], outcome: RunOutcome): Deliveries {
  const out: Deliveries = { callbacks: [], webhooks: [], failed: [] };
  const response = (outcome.response ?? '').trim();
  const endedAt = nowIso();
  // The callback turn carries the weakest trust of what fed this run (its own message and any steered into it).
  const runTrust = weakest(rows.map((r) => trustOf(r.origin ? JSON.parse(r.origin) : null)));
  for (const row of rows) {
    const origin = (row.origin ? JSON.parse(row.origin) : null) as MessageOrigin | null;
    if (origin?.callback && origin.from?.sessionKey) {
      if (outcome.status === 'ok') {
        out.callbacks.push({
          id: `cb_${row.id}`,
          target_run_id: target.runId,
          target_session_key: target.sessionKey,
          caller_session_key: origin.from.sessionKey,
          caller_run_id: origin.from.runId ?? null,
          response,
          meta: JSON.stringify({ fromAgentId: target.agentId, fromAgentName: target.agentName, endedAt, ...(origin.delegate ? { delegate: origin.delegate } : {}), ...(runTrust.kind === 'channel' ? { trust: runTrust } : {}), ...(origin.tree ? { tree: origin.tree } : {}) }),
          status: 'pending',
          error: null,
          created_at: endedAt,
          delivered_at: null,
        });
      } else out.failed.push({ callerSessionKey: origin.from.sessionKey, requestRunId: row.id });
    }
    if (row.webhook) {
      const hook = JSON.parse(row.webhook) as { url: string; secret?: string };
      const status = outcome.status === 'ok' ? 'ok' : 'error';
      out.webhooks.push(webhookRow(target.runId, hook, { runId: target.runId, sessionKey: target.sessionKey, status, response }, row.id));
    }
  }
  return out;
}
