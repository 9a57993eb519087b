// The orchestrator's vocabulary: what a session's queue holds, run ids, and how a run's end reads.
import crypto from 'node:crypto';
import type { QueueMode } from '../config';
import type { WaitResult } from '../gateway/types';
import type { RunRow } from '../store/schema';
import type { StartedRun } from '../store/store';
import type { ActiveRun, RunInput, RunOutcome } from './types';

/** The abort reason of a graceful stop: the run is left as it is, for a re-drive (here after a restart, or elsewhere). */
export const SHUTDOWN = Symbol.for('crosstalk.shutdown');

/**
 * A signal that aborts when a run's signal aborts with SHUTDOWN, and on no other abort: the run stops for a
 * handover (a graceful stop, or its process was told it is dead), so whatever it waits on is left to go on.
 */
export function handoverOf(signal: AbortSignal | undefined): AbortSignal | undefined {
  if (!signal) return undefined;
  const c = new AbortController();
  const on = () => {
    if (signal.reason === SHUTDOWN) c.abort(SHUTDOWN);
  };
  if (signal.aborted) on();
  else signal.addEventListener('abort', on, { once: true });
  return c.signal;
}

/**
 * A write kept to be awaited later, by a run or a queue that may be dropped first (this process fenced: its sessions
 * cleared): its rejection (FencedError) is then nobody's, and an unhandled rejection ends the process. Awaiting it
 * still rejects.
 */
export function kept<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

export interface SubmitOptions {
  queueMode?: QueueMode;
  webhook?: { url: string; secret?: string };
  origin?: Record<string, unknown>;
  /** Callbacks are never refused or dropped: `reject` and `interrupt` queue them as follow-ups. */
  neverRefuse?: boolean;
  /** A caller-chosen run id: a second submit with the same id is a no-op (exactly-once delivery). */
  runId?: string;
  /**
   * The request's idempotency key, claimed by the write that accepts the message (ClaimTaken when it was claimed
   * first). `settled` is set when that write recorded the final answer too (else the caller settles it).
   */
  claim?: { key: string; owner: string; settled?: boolean };
}

export interface QueueItem {
  runId: string;
  inputs: RunInput[];
  persisted: Promise<void>;
  collect: boolean;
  /** The trust of a `collect` turn's messages: only messages of the same trust are collected into one turn. */
  trustKey?: string;
  /** Its stored row when already read (as queued): the run need not read it again. */
  row?: RunRow;
  /** PostgreSQL: the enqueue statement started the run: its input rows, and the session row then. */
  startedWith?: StartedRun;
  /** Queued by `interrupt` at the front, to run once the active run has stopped. */
  interrupt?: boolean;
}

export interface SessionState {
  key: string;
  active: ActiveRun | null;
  /** The active run was paused on an approval before a restart; it resumes when a decision arrives. */
  parked: boolean;
  queue: QueueItem[];
  /** PostgreSQL: the run ids of this session this process has taken in (queued, steered, running). */
  known: Set<string>;
  /** PostgreSQL: set while the session's unfinished runs are being loaded after a claim. */
  loading?: Promise<void>;
  /** PostgreSQL: the lease epoch this process holds the session under. */
  epoch?: number;
}

export const TERMINAL = new Set(['ok', 'error', 'interrupted']);

/**
 * A run's id: `run_` and a UUIDv7 (RFC 9562: 48 bits of Unix milliseconds, then random bits). Ids made later sort
 * later, so the B-trees keyed by run id (the runs' primary key, the run-id indexes of messages, events and usage)
 * take new runs at their right edge, where a commit's pages are shared with the runs before it, rather than at a
 * random leaf each ("Stop 37" in BENCHMARKS.md).
 */
export const newRunId = () => `run_${uuidv7()}`;

/**
 * An RFC 9562 version 7 UUID: 48 bits of Unix milliseconds, then 74 random bits, taken from a version 4 UUID (its
 * random bits sit where version 7 wants its own, and its variant is the same). `crypto.randomUUID` draws from a pool it
 * refills 128 UUIDs at a time: ~0.4 µs a call here, against ~5 µs for `crypto.randomBytes(16)`.
 */
export function uuidv7(now = Date.now()): string {
  const t = now.toString(16).padStart(12, '0');
  const r = crypto.randomUUID(); // xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(15)}`;
}

/**
 * The id of what a tool call starts (a target run, a delegate session), derived from the calling run and call:
 * a re-driven call after a crash finds the same run instead of starting a second one.
 */
export const derivedId = (runId: string, callId: string, slot = '') =>
  crypto.createHash('sha256').update(`${runId}\u0000${callId}\u0000${slot}`).digest('hex').slice(0, 24);

export function waitResultOf(row: Pick<RunRow, 'status' | 'response' | 'error'>): WaitResult {
  if (row.status === 'ok') return { status: 'ok', response: (row.response ?? '').trim() };
  return { status: 'error', error: row.error ?? row.status, ...(row.response ? { response: row.response.trim() } : {}) };
}

export function endData(outcome: RunOutcome): Record<string, unknown> {
  return outcome.status === 'ok'
    ? { phase: 'end', status: 'ok', response: outcome.response ?? '' }
    : { phase: 'error', status: outcome.status, error: outcome.error ?? outcome.status };
}

/**
 * Whether `collect` may fold a message into one turn with others: a plain message that no delivery rides on. A
 * callback result, an inter-session message or another agent's `agent` carries its sender, its delivery and (for a
 * callback) content that must be exactly the target's response (CONTRACT §5, §9); folded in, it lost its row, and its
 * delivery stayed where it was for good. Such a message is queued as a follow-up of its own.
 */
export function collectable(input: RunInput): boolean {
  return input.kind === 'message' && input.meta?.deliveryId === undefined;
}

export function mergeInputs(inputs: RunInput[]): RunInput {
  return { ...inputs[0]!, content: inputs.map((i) => i.content).join('\n\n'), meta: { ...inputs[0]!.meta, collected: inputs.length } };
}

/** A queued row's inputs as the one input it runs (or is steered) with: a collected row's merged. */
export const oneInput = (inputs: RunInput[]): RunInput => (inputs.length > 1 ? mergeInputs(inputs) : inputs[0]!);

export const parseOrigin = (o: string | null): unknown => (o ? JSON.parse(o) : null);
