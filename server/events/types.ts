// Agent events and transcript shapes of CONTRACT §4, shared by the server, the tRPC client and the tests.

export type EventStream = 'lifecycle' | 'tool' | 'assistant' | 'approval' | 'message' | 'compaction' | 'delivery' | 'error';

export interface AgentEvent {
  /** Global, increasing id assigned by the event log (the SSE id). */
  id: number;
  runId: string;
  /** Per-run sequence number, from 1. */
  seq: number;
  stream: EventStream;
  ts: string;
  sessionKey: string;
  data: Record<string, unknown>;
  /** Where this event sits in the log (the SSE id): transport only, never part of the event's JSON. */
  cursor?: string;
}

/** An event before the log has given it an id. */
export type PendingEvent = Omit<AgentEvent, 'id'> & {
  /** PostgreSQL: the lease epoch its session was held under when it was emitted (written only while it still holds). */
  epoch?: number;
};

export type MessageRole = 'user' | 'assistant' | 'tool' | 'system';

export type MessageKind =
  | 'message'
  | 'tool_call'
  | 'tool_result'
  | 'inter_session'
  | 'agent_callback_result'
  | 'delegate_follow_up_started'
  | 'delegate_follow_up_completed'
  | 'mirror'
  | 'steer'
  | 'notice'
  | 'compaction';

export interface Author {
  type: 'user' | 'agent' | 'persona' | 'channel' | 'system';
  id: string;
  name?: string;
}

export interface TranscriptMessage {
  id: number;
  sessionKey: string;
  role: MessageRole;
  kind: MessageKind;
  content: string;
  createdAt: string;
  runId?: string;
  author: Author;
  tool?: { name: string; callId: string; args: unknown; result: unknown };
  meta?: Record<string, unknown>;
}

export type SessionKind = 'main' | 'subagent' | 'channel' | 'other';

export interface SessionSummary {
  sessionKey: string;
  agentId: string;
  kind: SessionKind;
  label?: string;
  model: string;
  lastActivityAt: string;
  status: 'idle' | 'running';
  messageCount: number;
  /** Extra fields beyond the contract: helpful to the web room. */
  parentKey?: string;
  queueMode?: string;
  thinkingLevel?: string;
  spawnDepth?: number;
  pendingApprovals?: number;
}

export interface PendingApproval {
  approvalId: string;
  /** What is asked (CONTRACT §3): a gated tool call, or a request tree past its budget. */
  kind: 'tool' | 'elicitation' | 'authorization' | 'budget';
  sessionKey: string;
  runId: string;
  /** The tool call this approval gates (as in the `tool` and `approval` events). */
  callId: string;
  tool: string;
  args: unknown;
  requestedAt: string;
  /** Where the tool comes from (an MCP server, its tool name and its annotations): shown on the card, never used for policy. */
  source?: { kind: 'mcp'; server: string; tool: string; annotations?: Record<string, unknown> };
  /** Where the run's trust came from (CONTRACT §5 "Trust"): the operator, or a channel sender. */
  trust?: Trust;
  /** An elicitation (kind `elicitation`): the MCP server, what it asks, and the form's schema or the URL to open. */
  server?: string;
  message?: string;
  mode?: 'form' | 'url';
  requestedSchema?: Record<string, unknown>;
  url?: string;
  /** The session's ancestors, root first (main → delegate → …), ending with this session; the room's inbox shows it. */
  chain?: string[];
}

/** A tool item's decisions (CONTRACT §3 approvals.resolve). */
export type Decision = 'allow_once' | 'allow_always' | 'deny';
/** The answers to an `elicitation` or `authorization` item (CONTRACT §3 approvals.resolve). */
export type ElicitDecision = 'accept' | 'decline' | 'cancel';

/**
 * Who decided an approval, and where (CONTRACT §3 `approvals.history`): a person (`user`, `id` says where: `room`, `inbox`,
 * `jsonrpc`), a chat approver (`chat`, `id` the peer, with its channel), a notification action (`push`), the agent's
 * reviewer model (`reviewer`, `id` its model spec) or an `allow_always` rule (`rule`).
 */
export type DecidedBy =
  | { type: 'user'; id?: string }
  | { type: 'chat'; id: string; channel: string; name?: string }
  | { type: 'push'; id?: string }
  | { type: 'reviewer'; id?: string }
  | { type: 'rule'; id?: string };

/** One decided item as `approvals.history` returns it (CONTRACT §3). */
export interface ApprovalRecord {
  approvalId: string;
  sessionKey: string;
  runId: string;
  kind: PendingApproval['kind'];
  tool: string;
  decision: string;
  decidedBy: DecidedBy;
  reason?: string;
  requestedAt: string;
  decidedAt: string;
}

/** The trust a run carries: the operator's (the API token), or a channel sender's (their `channelTools` policy). */
export type Trust = { kind: 'operator' } | { kind: 'channel'; channel: string; peer: string };

export type RunStatus = 'queued' | 'running' | 'waiting_approval' | 'ok' | 'error' | 'interrupted';
