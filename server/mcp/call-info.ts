// What an MCP tool call in flight is, as the connection, its elicitations and its OAuth items see it (a leaf module).
import type { Trust } from '../events/types';

export interface McpCallInfo {
  runId: string;
  sessionKey: string;
  callId: string;
  tool: string;
  /**
   * The calling run's trust (CONTRACT §5 "Trust"): the items its call raises carry it, so a chat approver whose own
   * message started the run neither gets their card nor decides them. Absent: the operator's.
   */
  trust?: Trust;
  /** The calling run's abort signal: a cancelled call cancels its elicitation. */
  signal: AbortSignal;
  /**
   * Aborted when the MCP call is over, however it ended (set by the connection): an elicitation the server raised
   * during it and never waited out (its request timed out, its cancellation was lost) is cancelled then.
   */
  ended?: AbortSignal;
  /**
   * Set when a status write the call's elicitation or authorization item makes was refused (FencedError: this process
   * lost the session's lease): the call then throws it, and the run ends quietly (the lease holder re-drives it).
   */
  fenced?: Error;
}
