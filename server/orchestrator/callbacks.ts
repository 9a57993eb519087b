// What a run owes when it ends (seed 000): callbacks to calling agent sessions and webhooks, planned as durable rows.
import type { CallbackRow, RunRow, WebhookRow } from '../store/schema';
import type { RunEndDeliveries } from '../store/store';
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
  /** The delivery records this end moves (answered or failed) and creates (one `callback` per callback row). */
  records: RunEndDeliveries;
}

/** The delivery of a callback row (CONTRACT §9 `callback`): its id derives from the row's. */
export const callbackDeliveryId = (callbackId: string) => `dlv_${callbackId}`;

export function planDeliveries(target: { runId: string; sessionKey: string; agentId: string; agentName: string }, rows: RunRow[], outcome: RunOutcome): Deliveries {
  const out: Deliveries = { callbacks: [], webhooks: [], failed: [], records: { answered: [], failed: [], created: [] } };
  const failedIds: string[] = [];
  const response = (outcome.response ?? '').trim();
  const endedAt = nowIso();
  // The callback turn carries the weakest trust of what fed this run (its own message and any steered into it).
  const runTrust = weakest(rows.map((r) => trustOf(r.origin ? JSON.parse(r.origin) : null)));
  for (const row of rows) {
    const origin = (row.origin ? JSON.parse(row.origin) : null) as MessageOrigin | null;
    // The hand-off that brought this message: answered with this end when a sync caller reads the stored answer, or
    // failed with the run. One answered by a callback row is `answered` when that row is written (its meta's
    // `answersDeliveryId`, store/deliveries.ts `rowDeliveries`), or failed if that row's run never starts (`endQueued`).
    const answeredByCallback = !!(origin?.callback && origin.from?.sessionKey && outcome.status === 'ok');
    if (typeof origin?.deliveryId === 'string' && !answeredByCallback) (outcome.status === 'ok' ? out.records.answered : failedIds).push(origin.deliveryId);
    if (origin?.callback && origin.from?.sessionKey) {
      if (outcome.status === 'ok') {
        out.callbacks.push({
          id: `cb_${row.id}`,
          target_run_id: target.runId,
          target_session_key: target.sessionKey,
          caller_session_key: origin.from.sessionKey,
          caller_run_id: origin.from.runId ?? null,
          response,
          meta: JSON.stringify({ fromAgentId: target.agentId, fromAgentName: target.agentName, endedAt, ...(origin.delegate ? { delegate: origin.delegate } : {}), ...(runTrust.kind === 'channel' ? { trust: runTrust } : {}), ...(origin.tree ? { tree: origin.tree } : {}), ...(typeof origin.deliveryId === 'string' ? { answers: origin.deliveryId } : {}) }),
          status: 'pending',
          error: null,
          created_at: endedAt,
          delivered_at: null,
        });
        out.records.created.push({ id: callbackDeliveryId(`cb_${row.id}`), kind: 'callback', from: { sessionKey: target.sessionKey, runId: target.runId }, to: { sessionKey: origin.from.sessionKey }, runId: `run_cb_${row.id}`, source: `callbacks:cb_${row.id}` });
      } else out.failed.push({ callerSessionKey: origin.from.sessionKey, requestRunId: row.id });
    }
    if (row.webhook) {
      const hook = JSON.parse(row.webhook) as { url: string; secret?: string };
      const status = outcome.status === 'ok' ? 'ok' : 'error';
      out.webhooks.push(webhookRow(target.runId, hook, { runId: target.runId, sessionKey: target.sessionKey, status, response }, row.id));
    }
  }
  if (failedIds.length) {
    const code = outcome.error === 'interrupted' || outcome.error === 'cancelled' ? 'interrupted' : outcome.error === 'budget_exceeded' ? 'budget_exceeded' : 'internal';
    out.records.failed.push({ ids: failedIds, error: { code, message: `target run ${outcome.status}: ${outcome.error ?? outcome.status}` } });
  }
  return out;
}
