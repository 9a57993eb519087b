// The tool contract: a factory-made definition with a zod input schema; execute answers data, never throws at the model.
import type { z } from 'zod';
import type { AgentConfig } from '../config';

export interface ToolCallContext {
  runId: string;
  sessionKey: string;
  agent: AgentConfig;
  callId: string;
  signal: AbortSignal;
  /** Per-run counters shared by every call of the run (send_message and outbound limits). */
  counters: Map<string, number>;
  /** Texts the run already delivered to its own stream (final-reply rule: not posted twice). */
  delivered: Set<string>;
  /** The session's working folder inside the agent's workspace (a delegate's `cwd`), when it has one. */
  sessionCwd?: string;
  /** The run's origin (channel, sub-agent parent…), as recorded when the run was accepted. */
  origin?: Record<string, unknown>;
  /** W3C traceparent of this tool call's span: runs the tool starts join the caller's trace. */
  traceparent?: string;
}

export interface ToolDef<I = unknown> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  /** The JSON schema offered to the model, when it comes from elsewhere (an MCP server's input schema). */
  jsonSchema?: Record<string, unknown>;
  /** Whether an agent is offered this tool (MCP tools: only agents that see the server); default all. */
  visibleTo?(agent: AgentConfig): boolean;
  /** Where the tool comes from, for approval cards and agents.list (MCP: server, tool, annotations). */
  source?: { kind: 'mcp'; server: string; tool: string; annotations?: Record<string, unknown> };
  execute(input: I, ctx: ToolCallContext): Promise<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyToolDef = ToolDef<any>;
