// Shapes shared by the orchestrator's parts: run inputs, the in-memory view of an active run.
import type { AgentConfig } from '../config';
import type { Author, MessageKind } from '../events/types';

/** One accepted message for a session (a user message, an inter-session message, a callback result…). */
export interface RunInput {
  content: string;
  kind: MessageKind;
  author: Author;
  meta?: Record<string, unknown>;
}

export interface InboxItem {
  /** The DB row that keeps this message durable until it is injected. */
  runId: string;
  input: RunInput;
  persisted: Promise<void>;
}

export interface ActiveRun {
  id: string;
  sessionKey: string;
  agent: AgentConfig;
  abort: AbortController;
  /** Messages steered into this run, injected at the next model boundary. */
  inbox: InboxItem[];
  /** Set once the run has taken its last look at the inbox: later steers become follow-ups. */
  closing: boolean;
  /** The last step's rows (the final answer), written with the run's end in one transaction. */
  finalRows?: import('../store/store').NewMessage[];
  /** Texts delivered to this run's own stream by messaging tools (not posted twice). */
  delivered: Set<string>;
  /** Per-run counters: `posted` (rows posted to the own stream), tool limits (send_message, outbound). */
  counters: Map<string, number>;
  /** The run's stored row, once loaded (origin, webhook). */
  row?: import('../store/schema').RunRow;
  /** Whether steered messages were merged into this run (their callbacks follow its end). */
  injected?: boolean;
  /** Set once the run's input rows are in the transcript; `onStarted` is told then. */
  started?: boolean;
  onStarted?: () => void;
  /** The session's working folder (a delegate's `cwd`), relative to the agent's workspace. */
  cwd?: string;
  /** Whether rows of the session fell outside the run's context when it was built (compaction then looks). */
  contextTruncated?: boolean;
  /** The newest row the run's prompt was built from (at its start, or by a compaction mid-run): mirrors after it join before a later step (lateMirrors). */
  promptThrough?: number;
  /** Set by `agent.cancel`: the run ends `error` / `cancelled` instead of `interrupted`. */
  cancelled?: { reason?: string };
  /** Where the run's message came from (a channel, a calling session…). */
  origin?: Record<string, unknown>;
  /** The model spec serving the run now (the primary, or the fallback it switched to): its window and price apply. */
  modelSpec?: string;
  /** The run's span (tracing on), its W3C traceparent (carried to the runs it starts) and trace id (shown in the room). */
  span?: import('@opentelemetry/api').Span;
  traceparent?: string;
  traceId?: string;
}

export interface RunOutcome {
  /**
   * `abandoned`: this process stopped driving the run (graceful stop, or lost the lease); nothing is recorded. A run
   * stopped from outside is an `error` (`interrupted`, or `cancelled`); the stored status `interrupted` is only for a run
   * that cannot be re-driven, written by the recovery without an outcome (CONTRACT §4).
   */
  status: 'ok' | 'error' | 'abandoned';
  response?: string;
  error?: string;
}
