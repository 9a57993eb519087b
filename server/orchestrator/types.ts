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
  /** Rows this run posted to its own session's stream (assistant text, persona messages). */
  posted: number;
  /** Per-run counters for tool limits (send_message, outbound sends). */
  counters: Map<string, number>;
}

export interface RunOutcome {
  status: 'ok' | 'error' | 'interrupted';
  response?: string;
  error?: string;
}
