// Prometheus metrics (prom-client) on a registry of our own, served by GET /api/metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'crosstalk_process_' });
  const m = {
    registry,
    runs: new Counter({ name: 'crosstalk_runs_total', help: 'Runs ended, by outcome', labelNames: ['outcome'] as const, registers: [registry] }),
    activeRuns: new Gauge({ name: 'crosstalk_active_runs', help: 'Runs executing now', registers: [registry] }),
    toolCalls: new Counter({ name: 'crosstalk_tool_calls_total', help: 'Tool calls, by tool and outcome', labelNames: ['tool', 'outcome'] as const, registers: [registry] }),
    messagingCalls: new Counter({ name: 'crosstalk_messaging_tool_calls_total', help: 'Calls of messaging tools (sessions_send, agents_message, send_message, message), by tool and outcome', labelNames: ['tool', 'outcome'] as const, registers: [registry] }),
    silence: new Counter({ name: 'crosstalk_agent_chose_silence_total', help: 'Runs that completed without posting anything', registers: [registry] }),
    rateLimited: new Counter({ name: 'crosstalk_rate_limited_total', help: 'Tool calls refused by a per-run limit', labelNames: ['tool'] as const, registers: [registry] }),
    messagesPerRun: new Histogram({ name: 'crosstalk_messages_sent_per_run', help: 'Messages a run posted to its stream', buckets: [0, 1, 2, 3, 5, 8, 13], registers: [registry] }),
    approvalWait: new Histogram({ name: 'crosstalk_approval_wait_seconds', help: 'Time from approval request to decision', buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 1800], registers: [registry] }),
    callbackLatency: new Histogram({ name: 'crosstalk_callback_delivery_seconds', help: 'Target run end to callback turn start', buckets: [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5], registers: [registry] }),
    webhooks: new Counter({ name: 'crosstalk_webhook_attempts_total', help: 'Webhook delivery attempts, by outcome (delivered, retry, dead)', labelNames: ['outcome'] as const, registers: [registry] }),
    pushes: new Counter({ name: 'crosstalk_pushes_total', help: 'Web Push notifications of pending items, by end state (delivered, gone, refused, dead)', labelNames: ['outcome'] as const, registers: [registry] }),
    modelSteps: new Counter({ name: 'crosstalk_model_steps_total', help: 'Model steps, by outcome', labelNames: ['outcome'] as const, registers: [registry] }),
    modelTokens: new Counter({ name: 'crosstalk_model_tokens_total', help: 'Model tokens, by agent, model spec and type (input, output, cached)', labelNames: ['agent', 'model', 'type'] as const, registers: [registry] }),
    modelCost: new Counter({ name: 'crosstalk_model_cost_usd_total', help: 'Model cost in USD from models.<spec> prices (0 for an unpriced model), by agent and model spec', labelNames: ['agent', 'model'] as const, registers: [registry] }),
    reviewerDecisions: new Counter({ name: 'crosstalk_reviewer_decisions_total', help: 'Decisions of agents\' reviewer models, by outcome (allow, deny, escalate) and cause (model: its own answer; malformed, error, streak: escalated for it)', labelNames: ['outcome', 'cause'] as const, registers: [registry] }),
    compactions: new Counter({ name: 'crosstalk_compactions_total', help: 'Session compactions, by agent and outcome (ok, error)', labelNames: ['agent', 'outcome'] as const, registers: [registry] }),
  };
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
