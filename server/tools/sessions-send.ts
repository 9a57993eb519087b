// sessions_send and agents_message (seed 004 + seed 000): one mechanism to message another session, sync or async.
import { derivedId, SHUTDOWN } from '../orchestrator/orchestrator';
import { newDeliveryId } from '../store/deliveries';
import { failpoint } from '../failpoints';
import { carryTrust } from '../trust/trust';
import { carryTree } from '../orchestrator/budget';
import { z } from 'zod';
import type { CrosstalkConfig } from '../config';
import { asToolData, CrosstalkError, isCrosstalkError, runErrorCode, toolError } from '../errors';
import { isCutOff } from '../store/pg-errors';
import { MAX_MESSAGE_BYTES, sessionKeySchema, webhookSchema } from '../gateway/schemas';
import { described, toolText } from './describe';
import type { MessageOrigin } from '../orchestrator/callbacks';
import type { Orchestrator } from '../orchestrator/orchestrator';
import { asciiLower, mainSessionKey } from '../sessions/keys';
import { checkWebhookUrl } from '../webhooks/guard';
import type { ToolCallContext, ToolDef } from './types';
import type { Usage } from '../usage/usage';

const webhookInput = described(webhookSchema, {
  url: 'http(s) URL that gets a POST of {runId, sessionKey, status, response} when the target run ends.',
  secret: 'When given, the POST is signed: X-Crosstalk-Timestamp: <unix seconds> and X-Crosstalk-Signature: sha256=<hex HMAC of "<timestamp>.<body>">.',
});
const common = {
  message: toolText(MAX_MESSAGE_BYTES),
  mode: z.enum(['sync', 'async']).optional(),
  timeoutSeconds: z.number().min(0).max(3600).optional(),
  webhook: webhookInput.optional(),
};
const commonDescriptions = {
  message: 'The message text for the target session (up to 256 KiB).',
  mode: '"sync" (default) waits for the reply; "async" returns at once and the reply comes back later as a callback message.',
  timeoutSeconds: 'sync only: how long to wait for the reply (0-3600 seconds, default 60); on timeout the message is still delivered.',
  webhook: 'Optional {url, secret}: also POST the result there when the target run ends.',
};
const sessionsSendInput = described(z.object({ sessionKey: sessionKeySchema, ...common }).strict(), {
  sessionKey: 'The target session key, agent:<agentId>:<rest> (not your own session).',
  ...commonDescriptions,
});
const agentsMessageInput = described(z.object({ agentId: z.string().min(1).max(128), ...common }).strict(), {
  agentId: "The target agent's id; the message goes to its main session agent:<agentId>:main.",
  ...commonDescriptions,
});

export interface SendDeps {
  orchestrator: () => Orchestrator;
  config: CrosstalkConfig;
  /** Records the sessions a session starts by messaging them (their usage rolls up into its tree). */
  usage?: Pick<Usage, 'link' | 'sessionExists'>;
}

const DEFAULT_SYNC_TIMEOUT_S = 60;

/** The shared mechanism: deliver as an `inter_session` row, then wait (sync) or arrange a callback (async). */
export function sendToSession(
  deps: SendDeps,
  ctx: Pick<ToolCallContext, 'sessionKey' | 'runId' | 'agent' | 'origin' | 'traceparent'> & { callId?: string; signal?: AbortSignal },
  p: { targetKey: string; message: string; mode?: 'sync' | 'async'; timeoutSeconds?: number; webhook?: { url: string; secret?: string } },
) {
  return asToolData(async () => {
    const orch = deps.orchestrator();
    if (p.targetKey === ctx.sessionKey) throw new CrosstalkError('invalid_request', 'cannot message your own session');
    orch.agentForKey(p.targetKey); // unknown_agent before anything is written
    if (p.webhook) {
      const refused = await checkWebhookUrl(p.webhook.url, deps.config.webhooks.allowPrivateNetwork);
      if (refused) throw new CrosstalkError('invalid_request', refused);
    }
    const mode = p.mode ?? 'sync';
    const origin: MessageOrigin = {
      from: { sessionKey: ctx.sessionKey, runId: ctx.runId, agentId: ctx.agent.id },
      mode,
      ...(mode === 'async' ? { callback: true } : {}),
      ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
      // The target run inherits this run's trust: a channel sender cannot reach further tools through another session.
      ...carryTrust(ctx.origin),
      // …and spends from this run's request tree (CONTRACT §5 "Budgets").
      ...carryTree({ id: ctx.runId, agent: ctx.agent, origin: ctx.origin }),
    };
    const fresh = deps.usage ? !(await deps.usage.sessionExists(p.targetKey)) : false;
    // The hand-off's record (CONTRACT §9), stored before anything reaches the target; its id, like the target run's,
    // derives from the call, so a call re-driven after a crash finds both instead of delivering twice.
    const derived = ctx.callId ? derivedId(ctx.runId, ctx.callId) : undefined;
    const deliveryId = derived ? `dlv_${derived}` : newDeliveryId();
    const store = orch.deliveryStore();
    await store.createDeliveries([{ id: deliveryId, kind: 'session_message', from: { sessionKey: ctx.sessionKey, runId: ctx.runId, callId: ctx.callId ?? null }, to: { sessionKey: p.targetKey }, runId: derived ? `run_${derived}` : null }]);
    failpoint('delivery.accepted');
    origin.deliveryId = deliveryId;
    let res;
    try {
      res = await orch.submit(
        p.targetKey,
        {
          content: p.message,
          kind: 'inter_session',
          author: { type: 'agent', id: ctx.agent.id, name: ctx.agent.name },
          meta: { fromSessionKey: ctx.sessionKey, fromRunId: ctx.runId, fromAgentId: ctx.agent.id, ...(ctx.callId ? { fromCallId: ctx.callId } : {}), deliveryId },
        },
        { origin, webhook: p.webhook, ...(derived ? { runId: `run_${derived}` } : {}) },
      );
    } catch (e) {
      // Refused by the target (a `reject` session busy, …): the delivery ends `failed` with the refusal.
      // Cut off by a lost PostgreSQL connection (or a lock conflict): not refused; the run's re-drive makes the call again.
      // No run was made for it: the record names none (runId: null).
      if (!isCutOff(e)) await store.advanceDeliveries([deliveryId], 'failed', { error: { code: (e as { code?: string }).code ?? 'internal', message: (e as Error).message }, runId: null });
      // A refusal answers with the record's id too (CONTRACT §9: the result of a send carries it).
      if (isCrosstalkError(e) && !isCutOff(e)) return { ...toolError(e.code, e.message), deliveryId };
      throw e;
    }
    // Steered into the target's active run (or collected into its queued one): the record names the run the tool
    // answers with, as `agent` does (CONTRACT §3), not the planned row merged into it.
    if (res.runId !== (derived ? `run_${derived}` : null)) await store.setDeliveryRun(deliveryId, res.runId);
    if (fresh) await deps.usage?.link(ctx.sessionKey, p.targetKey);
    if (mode === 'async') return { status: 'accepted', runId: res.runId, deliveryId };
    // This run stopped for a handover: the wait ends (nothing of the call is recorded; its re-drive waits again).
    // Cancelled or interrupted: the wait ends at once too (CONTRACT §3 `agent.cancel`: a tool in flight is killed);
    // the target's run goes on, its message delivered, and its delivery ends `answered` when it does.
    const w = await orch.wait(res.runId, (p.timeoutSeconds ?? DEFAULT_SYNC_TIMEOUT_S) * 1000, ctx.signal);
    if (ctx.signal?.aborted && ctx.signal.reason !== SHUTDOWN) return { status: 'error', runId: res.runId, deliveryId, error: { code: 'interrupted', message: 'the calling run was interrupted; the target run goes on' } };
    if (w.status === 'ok') return { status: 'ok', runId: res.runId, deliveryId, response: w.response ?? '' };
    // Timed out: the delivery stays where it is and goes on to `answered` when the target run ends.
    if (w.status === 'timeout') return { status: 'timeout', runId: res.runId, deliveryId, delivered: true };
    return { status: 'error', runId: res.runId, deliveryId, error: { code: runErrorCode(w.error), message: `target run failed: ${w.error ?? 'error'}` } };
  });
}

export function createSessionsSendTool(deps: SendDeps): ToolDef<z.infer<typeof sessionsSendInput>> {
  return {
    name: 'sessions_send',
    description:
      'Send a message to another session (agent:<agentId>:<rest>). mode "sync" (default) waits for the reply: {status:"ok", runId, response} or {status:"timeout", runId, delivered:true}. mode "async" returns {status:"accepted", runId} at once; the reply comes back to you later as a callback message. Optional webhook {url, secret}.',
    inputSchema: sessionsSendInput,
    execute: (i, ctx) => sendToSession(deps, ctx, { targetKey: i.sessionKey, message: i.message, mode: i.mode, timeoutSeconds: i.timeoutSeconds, webhook: i.webhook }),
  };
}

export function createAgentsMessageTool(deps: SendDeps): ToolDef<z.infer<typeof agentsMessageInput>> {
  return {
    name: 'agents_message',
    description:
      "Message another agent's main session (agent:<agentId>:main). Same modes and results as sessions_send: sync waits for the reply, async calls you back with it.",
    inputSchema: agentsMessageInput,
    execute: (i, ctx) =>
      sendToSession(deps, ctx, { targetKey: mainSessionKey(asciiLower(i.agentId)), message: i.message, mode: i.mode, timeoutSeconds: i.timeoutSeconds, webhook: i.webhook }),
  };
}
