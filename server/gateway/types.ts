// The gateway service surface (CONTRACT §3): JSON-RPC, tRPC and the CLI all call these methods.
import type { AgentEvent, PendingApproval, SessionSummary, TranscriptMessage } from '../events/types';
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
import type { DelegateRunResult, DelegateSummary } from '../orchestrator/delegates';

export interface AgentResult {
  runId: string;
  status: 'started' | 'queued' | 'steered';
}

export interface WaitResult {
  status: 'ok' | 'error' | 'timeout';
  response?: string;
  error?: string;
  /** Summed over the run's model steps (CONTRACT §3 `agent.wait`); `costUsd` only when its models are priced. */
  usage?: import('../usage/usage').RunUsage;
}

export interface AgentInfo {
  agentId: string;
  name: string;
  persona: string;
  model: string | string[];
  tools: Record<string, 'auto' | 'ask' | 'deny'>;
}

export interface Page<K extends string, T> {
  items: T[];
  next_cursor: string | null;
  key: K;
}

export interface EventSubscribeOptions {
  sessionKey?: string;
  runId?: string;
  /** Replay events with id > afterId first, then go live with no gap and no duplicate. */
  afterId?: number;
  signal?: AbortSignal;
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
  /** Model tokens and cost over every session (the status panel's roll-up). */
  usage?: { inputTokens: number; outputTokens: number; costUsd: number };
}

export interface Gateway {
  /** Channel delivery with no agent run, mirrored into the target's session (CONTRACT §3 `send`). */
  send(p: import('../channels').SendParams): Promise<{ messageId: string; sessionKey: string }>;
  /** The status panel's figures (active runs, approvals, delegate pool, counters). */
  status(): Promise<StatusSummary>;
  /** The webhook outbox, dead letters included (beyond CONTRACT §3: an operator's view). */
  webhooksList(p: WebhooksListParams): Promise<{ webhooks: WebhookInfo[] }>;
  agent(p: AgentParams): Promise<AgentResult>;
  agentWait(p: AgentWaitParams): Promise<WaitResult>;
  agentCancel(p: import('./schemas').AgentCancelParams): Promise<{ status: 'ok' }>;
  sessionsList(p: SessionsListParams, o?: { attention?: boolean }): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }>;
  sessionsGet(sessionKey: string): Promise<SessionSummary>;
  sessionsPatch(p: SessionsPatchParams): Promise<SessionSummary>;
  sessionsDelete(p: SessionsDeleteParams): Promise<{ status: 'ok' }>;
  chatHistory(p: ChatHistoryParams): Promise<{ messages: TranscriptMessage[]; next_cursor: string | null }>;
  approvalsList(p: ApprovalsListParams): Promise<{ approvals: PendingApproval[] }>;
  approvalsResolve(p: ApprovalsResolveParams): Promise<{ status: 'ok' }>;
  agentsList(): Promise<{ agents: AgentInfo[] }>;
  delegatesList(p: DelegatesListParams): Promise<{ sessions: DelegateSummary[]; next_cursor: string | null }>;
  delegatesMessages(p: DelegatesMessagesParams): Promise<{ messages: TranscriptMessage[]; next_cursor: string | null }>;
  delegatesDismiss(p: DelegatesDismissParams): Promise<{ status: 'ok' }>;
  /** A follow-up prompt sent on the parent's behalf (the agent picker's "Resume", the CLI's `resume`). */
  delegatesResume(p: DelegatesResumeParams): Promise<DelegateRunResult>;
  /** Reusable delegate sessions and their transcripts' total size, for the status panel. */
  delegatesStats(): Promise<{ reusable: number; bytes: number }>;
  /** Compacts a session now (CONTRACT §3 `sessions.compact`); `agent_busy` while a run is active. */
  sessionsCompact(p: import('./schemas').SessionsCompactParams): Promise<{ status: 'ok'; tokensBefore: number; tokensAfter: number }>;
  /** A session's model usage and its whole tree's (CONTRACT §3 `sessions.usage`). */
  sessionsUsage(p: import('./schemas').SessionsUsageParams): Promise<import('../usage/usage').SessionUsage>;
  /** Live + replayed agent events for a session or run. */
  events(o: EventSubscribeOptions): AsyncIterable<AgentEvent>;
}
