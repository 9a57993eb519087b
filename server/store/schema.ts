// Table types for Kysely; one schema for both dialects (JSON is stored as text, timestamps as ISO-8601 UTC text).
import type { Generated, Insertable, Selectable } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

export interface SessionsTable {
  key: string;
  agent_id: string;
  kind: string;
  label: string | null;
  model: string | null;
  thinking_level: string | null;
  spawn_depth: number;
  queue_mode: string | null;
  parent_key: string | null;
  meta: string | null;
  created_at: string;
  last_activity_at: string;
  message_count: number;
  bytes: number;
  status: string;
  last_interacted_at: string | null;
  turns: number;
  dismissed_at: string | null;
  /** The process that holds the session's lease (PostgreSQL); null when no one drives it. */
  owner: Generated<string | null>;
  /** Fencing token: bumped at every claim; a run's writes carry the epoch they were claimed under. */
  epoch: Generated<number>;
}

export interface MessagesTable {
  id: Generated<number>;
  session_key: string;
  role: string;
  kind: string;
  content: string;
  created_at: string;
  run_id: string | null;
  author_type: string;
  author_id: string;
  author_name: string | null;
  tool_name: string | null;
  tool_call_id: string | null;
  tool_args: string | null;
  tool_result: string | null;
  meta: string | null;
}

export interface RunsTable {
  id: string;
  session_key: string;
  status: string;
  input: string;
  queue_mode: string;
  response: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  origin: string | null;
  webhook: string | null;
  last_seq: number;
  merged_into: string | null;
  cancel_requested: Generated<string | null>;
}

export interface EventsTable {
  id: Generated<number>;
  run_id: string;
  seq: number;
  stream: string;
  ts: string;
  session_key: string;
  data: string;
  /** PostgreSQL only: the writing transaction's id (xid8, as text); with `id` it orders the log across processes. */
  tx?: Generated<string>;
  /** A folded row (server/store/event-fold.ts): the id of the last text delta it holds; null on every other row. */
  fold_id?: number | null;
  /** PostgreSQL only: the last folded delta's transaction id (xid8, as text). */
  fold_tx?: string | null;
}

export interface ToolStartsTable {
  run_id: string;
  call_id: string;
  started_at: string;
}

export interface ProcessesTable {
  id: string;
  lock_key: number;
  status: string;
  host: string;
  pid: number;
  url: string | null;
  started_at: string;
  heartbeat_ms: number;
}

export interface ApprovalsTable {
  id: string;
  session_key: string;
  run_id: string;
  call_id: string;
  tool: string;
  args: string;
  status: string;
  decision: string | null;
  reason: string | null;
  requested_at: string;
  resolved_at: string | null;
  /** JSON Trust of the gated run (0005_trust); null on rows from before it. */
  trust: string | null;
  /** `tool` (a gated call), `budget` (a request tree past its cap; 0013_budgets). */
  kind: Generated<string>;
  /** JSON answer of an `elicitation` item accepted with content (0014_mcp): what the MCP server gets. */
  response: Generated<string | null>;
  /** JSON DecidedBy of a decided item (0017_approval_history); null while pending or for a cancelled one. */
  decided_by: Generated<string | null>;
  /** DecidedBy's `type` alone (the reviewer's streak query). */
  decided_by_type: Generated<string | null>;
  /** An item the reviewer handed to a person (0029): `escalate` (its verdict) or `streak` (unseen, after N denials in a row). */
  review: Generated<string | null>;
}

export interface SessionToolRulesTable {
  session_key: string;
  tool: string;
  created_at: string;
}

export interface IdempotencyTable {
  key: string;
  /** JSON: the first answer (`done`), or the answer known so far (`pending`). */
  result: string;
  created_at: string;
  /** 0010_idempotency_claims: `pending` while the claimant answers, then `done`. */
  state: Generated<string>;
  /** The claimant process (cluster process id, or this SQLite process's instance id) while `pending`. */
  owner: Generated<string | null>;
  /** The run an `agent` key accepted. */
  run_id: Generated<string | null>;
}

export interface CallbacksTable {
  id: string;
  target_run_id: string;
  target_session_key: string;
  caller_session_key: string;
  caller_run_id: string | null;
  response: string;
  meta: string | null;
  status: string;
  error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface WebhookOutboxTable {
  id: string;
  run_id: string;
  url: string;
  secret: string | null;
  body: string;
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  /** Extra request headers as JSON (A2A push notifications); absent for crosstalk's own webhooks. */
  headers?: string | null;
  traceparent?: string | null;
  /** The attempts counted before its current round began (0032_delivery_rounds). */
  round_from: Generated<number>;
}

/** Sums of model_usage kept by triggers (0019_scale): the totals' rows add up to SUM() over model_usage. */
export interface UsageTotalsTable {
  shard: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}
/** Ended runs by status, kept by a trigger (0019_scale, PostgreSQL only): the rows of a status add up to its count in runs. */
export interface RunCountsTable {
  status: string;
  shard: number;
  n: number;
}
export interface ModelUsageTable {
  id: Generated<number>;
  run_id: string;
  session_key: string;
  agent_id: string;
  model: string;
  /** `step` (a run's model step) or `compaction` (a summarizer call). */
  kind: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost_usd: number;
  /** 1 when the model had a price in the config, 0 when its cost was counted as 0. */
  priced: number;
  /** The root run of the step's request tree (0013_budgets); null on rows from before it. */
  root_run_id?: string | null;
  created_at: string;
}

export interface SessionLinksTable {
  parent_key: string;
  child_key: string;
  created_at: string;
}

/** A hand-off's durable record (CONTRACT §9; 0015_deliveries): server/store/deliveries.ts. */
export interface DeliveriesTable {
  id: string;
  kind: string;
  from_session: string | null;
  from_run: string | null;
  /** The sender's tool call (the room links the target's row back to it). */
  from_call: string | null;
  to_session: string | null;
  to_channel: string | null;
  to_target: string | null;
  to_url: string | null;
  state: string;
  run_id: string | null;
  attempts: number;
  error_code: string | null;
  error_message: string | null;
  /** What it records elsewhere: `webhook_outbox:<id>`, `callbacks:<id>`, `channel:<json of the send>`. */
  source: string | null;
  created_at: string;
  updated_at: string;
  /** The earliest time its next attempt may go (a receiver's Retry-After); null: the backoff alone. */
  not_before: string | null;
  /** The attempts counted before its current round began (0032_delivery_rounds): a deliveries.retry round has maxAttempts of its own. */
  round_from: Generated<number>;
}

export interface Database {
  deliveries: DeliveriesTable;
  model_usage: ModelUsageTable;
  usage_totals: UsageTotalsTable;
  /** PostgreSQL only (0019_scale). */
  run_counts: RunCountsTable;
  session_links: SessionLinksTable;
  callbacks: CallbacksTable;
  webhook_outbox: WebhookOutboxTable;
  sessions: SessionsTable;
  messages: MessagesTable;
  runs: RunsTable;
  events: EventsTable;
  approvals: ApprovalsTable;
  session_tool_rules: SessionToolRulesTable;
  idempotency: IdempotencyTable;
  tool_starts: ToolStartsTable;
  processes: ProcessesTable;
  a2a_push_configs: A2APushConfigsTable;
  channel_senders: ChannelSendersTable;
  channel_held: ChannelHeldTable;
  push_keys: PushKeysTable;
  push_subscriptions: PushSubscriptionsTable;
  push_actions: PushActionsTable;
  push_tokens: PushTokensTable;
}

/** A2A push notification configs (server/a2a/push.ts): a task's updates go to these URLs through the webhook outbox. */
export interface A2APushConfigsTable {
  task_id: string;
  id: string;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  created_at: string;
}

/** A channel sender under `dmPolicy: pairing`: pending (with its code), approved or denied (0005_trust). */
export interface ChannelSendersTable {
  channel: string;
  peer: string;
  status: string;
  code: string;
  first_message: string;
  requested_at: string;
  resolved_at: string | null;
}

/** A message held until its sender is paired (JSON of the inbound message). */
export interface ChannelHeldTable {
  id: Generated<number>;
  channel: string;
  peer: string;
  agent_id: string;
  message: string;
  created_at: string;
}

/** The server's VAPID key pair (base64url, as web-push makes them), one row `vapid` (0018_push). */
export interface PushKeysTable {
  id: string;
  public_key: string;
  private_key: string;
  created_at: string;
}

/** A browser's push subscription (CONTRACT §3 `push.subscribe`), unique by endpoint. */
export interface PushSubscriptionsTable {
  endpoint: string;
  p256dh: string;
  auth: string;
  created_at: string;
  updated_at: string;
}

/** A pending item's push, claimed once across processes (0018_push). */
export interface PushActionsTable {
  approval_id: string;
  created_at: string;
}

/** A one-time action token of a `tool` item's push (its SHA-256): a notification's action resolves that item with it. */
export interface PushTokensTable {
  token_hash: string;
  approval_id: string;
  created_at: string;
}

export type SessionRow = Selectable<SessionsTable>;
export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Insertable<MessagesTable>;
export type RunRow = Selectable<RunsTable>;
export type EventRow = Selectable<EventsTable>;
export type ApprovalRow = Selectable<ApprovalsTable>;
export type CallbackRow = Selectable<CallbacksTable>;
export type WebhookRow = Selectable<WebhookOutboxTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
