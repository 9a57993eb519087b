// delegate_agent and delegate_sessions (seed 002): launch or continue delegates; find, preview and dismiss them.
import { z } from 'zod';
import { asToolData, toolError } from '../errors';
import type { Delegates } from '../orchestrator/delegates';
import type { ToolDef } from './types';
import { described } from './describe';

const batchItem = described(z.object({ agent_id: z.string().min(1).max(128), prompt: z.string().max(256 * 1024) }), {
  agent_id: 'The agent id to delegate this item to.',
  prompt: 'The task for that delegate.',
});

const delegateInput = described(
  z
    .object({
      agent_id: z.string().min(1).max(128).optional(),
      prompt: z.string().max(256 * 1024).optional(),
      mode: z.enum(['standard', 'detached']).optional(),
      batch: z.array(batchItem).max(16).optional(),
      conversation_id: z.string().min(1).max(512).optional(),
      cwd: z.string().max(4096).optional(),
    })
    .strict(),
  {
    agent_id: 'The agent to delegate to (required for a new delegate; optional with conversation_id).',
    prompt: 'The task for the delegate (required unless batch is given).',
    mode: '"standard" (default) waits for the result; "detached" returns at once and the result comes back later as a callback message.',
    batch: 'Several new delegates at once, run in parallel: [{agent_id, prompt}], at most 16. Not with conversation_id.',
    conversation_id: 'Continue this earlier delegate (from a previous result or delegate_sessions list) instead of starting a new one.',
    cwd: "Working folder for a new delegate, relative to its agent's workspace.",
  },
);

const sessionsInput = described(
  z
    .object({
      operation: z.enum(['list', 'messages', 'dismiss']),
      conversation_id: z.string().min(1).max(512).optional(),
      cursor: z.string().min(1).max(2048).optional(),
      limit: z.number().int().min(1).max(50).optional(),
    })
    .strict(),
  {
    operation: '"list" your delegates, read one\'s "messages", or "dismiss" one you no longer need.',
    conversation_id: 'The delegate conversation, required for messages and dismiss.',
    cursor: 'next_cursor from a previous page; omit for the first page.',
    limit: 'How many to return (1-50). Default 3.',
  },
);


export function createDelegateAgentTool(delegates: () => Delegates): ToolDef<z.infer<typeof delegateInput>> {
  return {
    name: 'delegate_agent',
    description: [
      'Delegate work to another agent in its own delegate session.',
      'New delegate: {agent_id, prompt}. mode "standard" (default) waits and returns {status:"ok", run_id, conversation_id, agent_id, response};',
      'mode "detached" returns {status:"accepted", ...} at once and the result comes back to you later as a callback message.',
      'batch: [{agent_id, prompt}, ...] runs several in parallel and returns {status:"ok", runs:[...]}.',
      'Follow-up: pass conversation_id (from an earlier result or delegate_sessions list) with a new prompt to continue that same delegate, warm, instead of starting a cold one;',
      'agent_id is then optional. Each call returns a new run_id. A follow-up returns no earlier context: call delegate_sessions messages only if you really need to see what the delegate did.',
      'Errors: invalid_request, unknown_agent, unknown_conversation, agent_busy ("delegate still running"), limit_exceeded (nesting depth or too many at once).',
    ].join(' '),
    inputSchema: delegateInput,
    execute: (input, ctx) =>
      asToolData(() =>
        delegates().delegate({ sessionKey: ctx.sessionKey, agent: ctx.agent, runId: ctx.runId, callId: ctx.callId, signal: ctx.signal, origin: ctx.origin, traceparent: ctx.traceparent }, input),
      ),
  };
}

export function createDelegateSessionsTool(delegates: () => Delegates): ToolDef<z.infer<typeof sessionsInput>> {
  return {
    name: 'delegate_sessions',
    description: [
      'Your own delegate sessions, reusable for follow-ups.',
      'operation "list": {sessions:[{conversation_id, agent_id, mode, cwd, last_interacted_at, status, turns, bytes}], next_cursor}, newest interaction first (limit default 3, max 50).',
      'operation "messages" with conversation_id: the delegate\'s newest messages first, {messages, next_cursor}; use it only when you must recall what the delegate did.',
      'operation "dismiss" with conversation_id: remove a delegate you no longer need from the pool ({status:"ok"}).',
      'Then continue a delegate with delegate_agent {conversation_id, prompt}.',
    ].join(' '),
    inputSchema: sessionsInput,
    execute: (i, ctx) =>
      asToolData(async () => {
        const d = delegates();
        if (i.operation === 'list') return d.list(ctx.sessionKey, { cursor: i.cursor, limit: i.limit });
        if (!i.conversation_id) return toolError('invalid_request', `conversation_id is required for ${i.operation}`);
        if (i.operation === 'messages') return d.messages(ctx.sessionKey, i.conversation_id, { cursor: i.cursor, limit: i.limit });
        return d.dismiss(ctx.sessionKey, i.conversation_id);
      }),
  };
}
