// The gateway service surface (CONTRACT §3): JSON-RPC, tRPC and the CLI all call these methods.
import type { AgentEvent, Author, PendingApproval, SessionSummary, TranscriptMessage } from '../events/types';
import type {
  AgentParams,
  AgentWaitParams,
  ApprovalsListParams,
  ApprovalsResolveParams,
  ChatHistoryParams,
  SessionsDeleteParams,
  SessionsListParams,
  SessionsPatchParams,
  WebhooksListParams,
  DelegatesListParams,
  DelegatesMessagesParams,
  DelegatesDismissParams,
  DelegatesResumeParams,
} from './schemas';

/** `agentDelivered`: a message from another agent outside (MCP, A2A), recorded as a `session_message` delivery (§9). */
export interface AgentDeliveredParams {
  sessionKey: string;
  message: string;
  /** Who the transcript row names (default: the user). */
  author?: Author;
  /** Kept on the row beside its `deliveryId`. */
  meta?: Record<string, unknown>;
  /** The run's origin beside its `deliveryId` (where its answer goes). */
  origin?: Record<string, unknown>;
}

export interface AgentResult {
  runId: string;
  status: 'started' | 'queued' | 'steered';
}

export interface WaitResult {
  status: 'ok' | 'error' | 'timeout';
  response?: string;
  error?: string;
  /** A run that failed with messages steered into it that it never took: the run they were answered in. */
  continuedIn?: string;
  /** Summed over the run's model steps (CONTRACT §3 `agent.wait`); `costUsd` only when its models are priced. */
  usage?: import('../usage/usage').RunUsage;
}

export interface AgentInfo {
  agentId: string;
  name: string;
  persona: string;
  model: string | string[];
  tools: Record<string, 'auto' | 'ask' | 'deny'>;
  /** The MCP tools this agent sees, with their effective policy and the server's (untrusted) annotations. */
  mcpTools?: Array<{ name: string; server: string; tool: string; policy: 'auto' | 'ask' | 'deny'; annotations?: Record<string, unknown> }>;
  /** Set for a remote A2A agent. */
  remote?: { a2a: string };
}

export interface Page<K extends string, T> {
  items: T[];
  next_cursor: string | null;
  key: K;
}

export interface EventSubscribeOptions {
  sessionKey?: string;
  runId?: string;
  /** Replay events after this cursor first (an SSE id), then go live with no gap and no duplicate. */
  after?: import('../events/cursor').EventCursor;
  signal?: AbortSignal;
}

export interface SearchResult {
  sessionKey: string;
  messageId: number;
  role: string;
  kind: string;
  snippet: string;
  createdAt: string;
}

export interface WebhookInfo {
  id: string;
  runId: string;
  url: string;
  status: 'pending' | 'delivered' | 'dead';
  attempts: number;
  lastError?: string;
  nextAttemptAt: string;
  createdAt: string;
  deliveredAt?: string;
}

export interface StatusSummary {
  activeRuns: number;
  pendingApprovals: number;
  delegates: { reusable: number; bytes: number };
  runs: { ok: number; error: number; interrupted: number };
  silence: number;
  rateLimited: number;
  webhooksDead: number;
  /** The Node.js version this process runs on. */
  node?: string;
  /** PostgreSQL: the live gateway processes of the cluster. */
  processes?: Array<{ id: string; host: string; pid: number; url?: string; startedAt: string }>;
  /** MCP servers: up (`ready`), connecting, or `failed` (their tools answer tool_unavailable). */
  mcp?: Array<{ server: string; state: 'connecting' | 'ready' | 'failed'; tools: number; error?: string }>;
  /** Model tokens and cost over every session (the status panel's roll-up). */
  usage?: { inputTokens: number; outputTokens: number; costUsd: number };
}

export interface Gateway {
  /** Channel delivery with no agent run, mirrored into the target's session (CONTRACT §3 `send`). */
  send(p: import('./schemas').SendParams): Promise<{ messageId: string; sessionKey: string }>;
  /** The status panel's figures (active runs, approvals, delegate pool, counters). */
  status(): Promise<StatusSummary>;
  /** The webhook outbox, dead letters included (beyond CONTRACT §3: an operator's view). */
  webhooksList(p: WebhooksListParams): Promise<{ webhooks: WebhookInfo[] }>;
  agent(p: AgentParams): Promise<AgentResult>;
  /** `agent` as a tracked hand-off from outside (MCP `crosstalk_send`): its delivery record's id too (CONTRACT §9, §10). */
  agentDelivered(p: AgentDeliveredParams): Promise<AgentResult & { deliveryId: string }>;
  agentWait(p: AgentWaitParams): Promise<WaitResult>;
  agentCancel(p: import('./schemas').AgentCancelParams): Promise<{ status: 'ok' }>;
  sessionsList(p: SessionsListParams, o?: { attention?: boolean }): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }>;
  sessionsGet(sessionKey: string): Promise<SessionSummary>;
  sessionsPatch(p: SessionsPatchParams): Promise<SessionSummary>;
  sessionsDelete(p: SessionsDeleteParams): Promise<{ status: 'ok' }>;
  chatHistory(p: ChatHistoryParams): Promise<{ messages: TranscriptMessage[]; next_cursor: string | null }>;
  /** Full text over transcripts, tool results included, best match first (CONTRACT §3 `sessions.search`). */
  sessionsSearch(p: import('./schemas').SessionsSearchParams): Promise<{ results: SearchResult[]; next_cursor: string | null }>;
  /** The ids of a session's runs going now (the room's Stop). */
  sessionActiveRuns(sessionKey: string): Promise<{ runIds: string[] }>;
  approvalsList(p: ApprovalsListParams, o?: { own?: boolean }): Promise<{ approvals: PendingApproval[] }>;
  /** Decides a pending item; `by` is who and where (the room, JSON-RPC, chat, push …), kept in the record. */
  approvalsResolve(p: ApprovalsResolveParams, by: import('../events/types').DecidedBy): Promise<{ status: 'ok' }>;
  /** Decided items, newest decision first (CONTRACT §3 `approvals.history`). */
  approvalsHistory(p: import('./schemas').ApprovalsHistoryParams): Promise<{ approvals: import('../events/types').ApprovalRecord[]; next_cursor: string | null }>;
  agentsList(): Promise<{ agents: AgentInfo[] }>;
  delegatesList(p: DelegatesListParams): Promise<{ sessions: DelegateSummary[]; next_cursor: string | null }>;
  delegatesMessages(p: DelegatesMessagesParams): Promise<{ messages: TranscriptMessage[]; next_cursor: string | null }>;
  delegatesDismiss(p: DelegatesDismissParams): Promise<{ status: 'ok' }>;
  /** A follow-up prompt sent on the parent's behalf (the agent picker's "Resume", the CLI's `resume`). */
  delegatesResume(p: DelegatesResumeParams): Promise<DelegateRunResult>;
  /** Reusable delegate sessions and their transcripts' total size, for the status panel. */
  delegatesStats(): Promise<{ reusable: number; bytes: number }>;
  /** Pending pairing requests of channel senders (CONTRACT §3). */
  pairingsList(): Promise<{ pairings: import('../trust/pairing').PairingInfo[] }>;
  pairingsResolve(p: import('../trust/pairing').PairingsResolveParams): Promise<{ status: 'ok' }>;
  /** Compacts a session now (CONTRACT §3 `sessions.compact`); `agent_busy` while a run is active. */
  sessionsCompact(p: import('./schemas').SessionsCompactParams): Promise<{ status: 'ok'; tokensBefore: number; tokensAfter: number }>;
  /** A session's model usage and its whole tree's (CONTRACT §3 `sessions.usage`). */
  sessionsUsage(p: import('./schemas').SessionsUsageParams): Promise<import('../usage/usage').SessionUsage>;
  /** Every session's runs in four groups: needs input, working, done, failed (CONTRACT §3 `runs.board`). */
  runsBoard(p: import('./schemas').RunsBoardParams): Promise<Board>;
  /** The server's VAPID public key (CONTRACT §3 `push.vapidKey`). */
  pushVapidKey(): Promise<{ publicKey: string }>;
  /** Stores a browser's push subscription, one per endpoint (CONTRACT §3 `push.subscribe`). */
  pushSubscribe(p: import('../push/schemas').PushSubscribeParams): Promise<{ status: 'ok' }>;
  pushUnsubscribe(p: import('../push/schemas').PushUnsubscribeParams): Promise<{ status: 'ok' }>;
  /** One delivery record (CONTRACT §9); `unknown_delivery`. */
  deliveriesGet(p: import('./schemas').DeliveriesGetParams): Promise<import('../store/deliveries').Delivery>;
  /** Delivery records newest first; `sessionKey` matches either end. */
  deliveriesList(p: import('./schemas').DeliveriesListParams): Promise<{ deliveries: import('../store/deliveries').Delivery[]; next_cursor: string | null }>;
  /** The deliveries one tool call started (the room's tool card). */
  deliveriesForCall(p: { runId: string; callId: string }): Promise<{ deliveries: import('../store/deliveries').Delivery[] }>;
  /** A `dead` delivery attempted again under the same id; otherwise `not_retryable`. */
  deliveriesRetry(p: import('./schemas').DeliveriesRetryParams): Promise<{ status: 'ok' }>;
  /** Live + replayed agent events for a session or run. */
  /** Where a reader opening the session mid-run replays from: just before its run in flight's first event. */
  activeRunStart(sessionKey: string): Promise<import('../events/cursor').EventCursor | undefined>;
  events(o: EventSubscribeOptions): AsyncIterable<AgentEvent>;
}

/** One delegate run's answer (`delegate_agent`, CONTRACT §5). */
export interface DelegateRunResult {
  status: 'ok' | 'accepted' | 'error';
  run_id: string;
  conversation_id: string;
  agent_id: string;
  /** This run's delivery record (CONTRACT §9). */
  delivery_id?: string;
  response?: string;
  error?: { code: string; message: string };
}

/** A delegate session as `delegate_sessions list` shows it (CONTRACT §5). */
export interface DelegateSummary {
  conversation_id: string;
  agent_id: string;
  mode: string;
  cwd: string | null;
  last_interacted_at: string;
  status: 'running' | 'idle';
  turns: number;
  bytes: number;
}

/** `runs.board` (CONTRACT §3, §7): one run on the agent board. */
export interface BoardItem {
  runId: string;
  sessionKey: string;
  agentId: string;
  /** The session's ancestors, root first, ending with the session itself. */
  parentChain: string[];
  status: string;
  /**
   * What the run waits for: `approval` when it waits for a person (under "Needs input"); `delegate` when it works on
   * while a delegate session below it waits for a person (under "Working"), that session in `delegateSessionKey`.
   */
  waitingFor?: string;
  delegateSessionKey?: string;
  /** The pending item it waits on, and its tool. */
  approvalId?: string;
  tool?: string;
  startedAt: string;
  endedAt?: string;
  costUsd: number;
  /** The run's request tree spend against its agent's `budget` (CONTRACT §5), when it has one. */
  budget?: { rootRunId: string; spentUsd: number; capUsd: number | null; spentTokens: number; capTokens: number | null };
  /** A dead delivery on the board under "Failed" (CONTRACT §7, §9): what to retry. */
  delivery?: { deliveryId: string; kind: string; to: string; attempts: number; error?: string };
}

export interface Board {
  needsInput: BoardItem[];
  working: BoardItem[];
  done: BoardItem[];
  failed: BoardItem[];
}
