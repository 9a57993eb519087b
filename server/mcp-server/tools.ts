// crosstalk's own MCP tools (CONTRACT §10): agents, send, history and wait, as MCP clients (coding agents) call them.
import { z } from 'zod';
import type { Gateway, WaitResult } from '../gateway/types';
import { cursorSchema, limitSchema, messageSchema, sessionKeySchema } from '../gateway/schemas';
import { callMethod, zodIssues } from '../gateway/jsonrpc';
import { nulPath, UNSTORABLE_TEXT } from '../unstorable';
import { CrosstalkError, errorMessage, isCrosstalkError, runErrorCode } from '../errors';
import { asciiLower, mainSessionKey } from '../sessions/keys';

/** How long a sync `crosstalk_send` waits for the reply unless told (as `sessions_send`). */
const DEFAULT_SYNC_TIMEOUT_S = 60;
/** How long `crosstalk_wait` waits unless told (as `agent.wait`). */
const DEFAULT_WAIT_S = 30;

export interface McpToolContext {
  gateway: Gateway;
  defaultAgentId: string;
  /** Present when the client asked for progress (`_meta.progressToken`): one call per thing that happened. */
  progress?: (message: string) => Promise<void>;
  signal: AbortSignal;
}

export interface McpToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  readOnly: boolean;
  run(args: never, ctx: McpToolContext): Promise<unknown>;
}

const sendInput = z
  .object({
    sessionKey: sessionKeySchema.optional().describe('The target session (default: the main session of agentId, or of the default agent).'),
    agentId: z.string().min(1).max(64).optional().describe("The target agent; its main session `agent:<agentId>:main`."),
    message: messageSchema.describe('The message for the agent (at most 256 KiB).'),
    mode: z.enum(['sync', 'async']).optional().describe('sync (default) waits for the reply; async answers at once with the runId.'),
    timeoutSeconds: z.number().min(0).max(3600).optional().describe(`sync only: how long to wait (default ${DEFAULT_SYNC_TIMEOUT_S}); on timeout the message is still delivered.`),
  })
  .strict();

const historyInput = z
  .object({ sessionKey: sessionKeySchema, limit: limitSchema.optional(), cursor: cursorSchema.optional() })
  .strict();

const waitInput = z.object({ runId: z.string().min(1).max(128), timeoutSeconds: z.number().min(0).max(600).optional() }).strict();

/** agent.wait takes at most 600 s at a time; a longer sync send waits in turns until its deadline or the call ends. */
async function waitUpTo(gateway: Gateway, runId: string, totalMs: number, signal: AbortSignal): Promise<WaitResult> {
  const deadline = Date.now() + totalMs;
  // The call cancelled (notifications/cancelled, or its client gone): stop waiting at once; the run goes on.
  const cancelled = new Promise<WaitResult>((resolve) => {
    const stop = () => resolve({ status: 'timeout' });
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
  for (;;) {
    const timeoutMs = Math.max(0, Math.min(600_000, Math.round(deadline - Date.now())));
    const w = await Promise.race([callMethod(gateway, 'agent.wait', { runId, timeoutMs }) as Promise<WaitResult>, cancelled]);
    if (w.status !== 'timeout' || Date.now() >= deadline || signal.aborted) return w;
  }
}

/** The main session of `agentId`; an agent id that cannot make a session key is an invalid argument naming the field. */
function targetOf(agentId: string): string {
  const key = sessionKeySchema.safeParse(mainSessionKey(asciiLower(agentId)));
  if (key.success) return key.data;
  const message = `not an agent id: ${key.error.issues[0]?.message ?? 'invalid'}`;
  throw new CrosstalkError('invalid_request', `agentId: ${message}`, [{ path: 'agentId', message }]);
}

/** The live events of a run, as one-line progress messages, until `signal` aborts. */
async function reportProgress(ctx: McpToolContext, runId: string, signal: AbortSignal) {
  if (!ctx.progress) return;
  try {
    for await (const e of ctx.gateway.events({ runId, signal })) {
      const d = (e.data ?? {}) as Record<string, unknown>;
      if (e.stream === 'assistant') continue; // text deltas: too many to be progress; the reply carries the text
      const what = e.stream === 'tool' ? `tool ${String(d.name ?? d.tool ?? '')} ${String(d.phase ?? '')}` : `${e.stream} ${String(d.phase ?? '')}`;
      await ctx.progress(what.trim());
    }
  } catch {
    // the stream ends with the call (aborted): nothing to report
  }
}

export const MCP_TOOLS: McpToolDef[] = [
  {
    name: 'crosstalk_agents',
    title: 'List agents',
    description: "crosstalk's agents: id, name, model and tool policies.",
    input: z.object({}).strict(),
    readOnly: true,
    run: async (_args: never, ctx) => callMethod(ctx.gateway, 'agents.list', {}),
  },
  {
    name: 'crosstalk_send',
    title: 'Message an agent',
    description:
      'Sends a message to a crosstalk agent session. sync (default) waits for the reply: {status:"ok", runId, deliveryId, response}, or {status:"timeout", runId, deliveryId, delivered:true}; async answers {status:"accepted", runId, deliveryId}. Progress notifications follow the run when asked for.',
    input: sendInput,
    readOnly: false,
    run: async (args: z.infer<typeof sendInput>, ctx) => {
      const sessionKey = args.sessionKey ?? targetOf(args.agentId ?? ctx.defaultAgentId);
      // A hand-off with its delivery record (CONTRACT §9, §10): every answer carries its id, as sessions_send's do.
      const started = await ctx.gateway.agentDelivered({ sessionKey, message: args.message });
      const { runId, deliveryId } = started;
      if (args.mode === 'async') return { status: 'accepted', runId, deliveryId };
      const stop = new AbortController();
      const onAbort = () => stop.abort();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      const progress = reportProgress(ctx, runId, stop.signal);
      try {
        const w = await waitUpTo(ctx.gateway, runId, (args.timeoutSeconds ?? DEFAULT_SYNC_TIMEOUT_S) * 1000, ctx.signal);
        if (w.status === 'timeout') return { status: 'timeout', runId, deliveryId, delivered: true };
        if (w.status === 'error') return { status: 'error', runId, deliveryId, error: { code: runErrorCode(w.error), message: `target run failed: ${w.error ?? 'error'}` } };
        return { status: 'ok', runId, deliveryId, response: w.response ?? '' };
      } finally {
        stop.abort();
        ctx.signal.removeEventListener('abort', onAbort);
        await progress;
      }
    },
  },
  {
    name: 'crosstalk_history',
    title: 'Read a session',
    description: "A session's transcript, newest first: {messages, next_cursor} (as chat.history).",
    input: historyInput,
    readOnly: true,
    run: async (args: z.infer<typeof historyInput>, ctx) => callMethod(ctx.gateway, 'chat.history', args),
  },
  {
    name: 'crosstalk_wait',
    title: 'Wait for a run',
    description: 'Waits for a run to end: {status:"ok"|"error"|"timeout", response?, error?, usage?} (as agent.wait).',
    input: waitInput,
    readOnly: true,
    run: async (args: z.infer<typeof waitInput>, ctx) =>
      callMethod(ctx.gateway, 'agent.wait', { runId: args.runId, timeoutMs: Math.round((args.timeoutSeconds ?? DEFAULT_WAIT_S) * 1000) }),
  },
];

/** A refusal keeps the tool's own answer (`value`) when it had one, so its ids (runId, deliveryId) reach the client. */
export type McpCallOutcome = { ok: true; value: unknown } | { ok: false; code: string; message: string; issues?: Array<{ path: string; message: string }>; value?: unknown };

/** Validates and runs one tool; every refusal is data (the §6 code), never a throw. */
export async function callMcpTool(tool: McpToolDef, rawArgs: unknown, ctx: McpToolContext): Promise<McpCallOutcome> {
  const nul = nulPath(rawArgs);
  if (nul !== null) return { ok: false, code: 'invalid_request', message: `${nul}: ${UNSTORABLE_TEXT}`, issues: [{ path: nul, message: UNSTORABLE_TEXT }] };
  const parsed = tool.input.safeParse(rawArgs ?? {});
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    return { ok: false, code: 'invalid_request', message: issues.map((i) => `${i.path || '(arguments)'}: ${i.message}`).join('; '), issues };
  }
  try {
    const value = await tool.run(parsed.data as never, ctx);
    // A tool's refusal ({status: "error", error: {code, message}}) is an error result; a run that ended in error, as
    // agent.wait reports it ({status: "error", error: "<text>"}), is an answer like any other.
    const v = value as { status?: string; error?: unknown };
    if (v && v.status === 'error' && v.error && typeof v.error === 'object') {
      const e = v.error as { code?: string; message?: string };
      return { ok: false, code: e.code ?? 'internal', message: e.message ?? 'failed', value };
    }
    return { ok: true, value };
  } catch (e) {
    if (isCrosstalkError(e)) return { ok: false, code: e.code, message: e.message, ...(e.issues ? { issues: e.issues } : {}) };
    if (e instanceof z.ZodError) return { ok: false, code: 'invalid_request', message: 'invalid arguments', issues: zodIssues(e) };
    return { ok: false, code: 'internal', message: errorMessage(e) };
  }
}
