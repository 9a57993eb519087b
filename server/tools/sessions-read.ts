// sessions_list and sessions_history: read-only views of the gateway's sessions.list and chat.history for the model.
import { z } from 'zod';
import { asToolData } from '../errors';
import type { Gateway } from '../gateway/types';
import { chatHistoryParams, sessionsListParams } from '../gateway/schemas';
import type { ToolDef } from './types';
import { described } from './describe';

const listInput = described(sessionsListParams, {
  limit: 'How many sessions to return (1-200). Default 50.',
  cursor: 'next_cursor from a previous page, to read further; omit for the first page.',
  agentId: 'Only sessions of this agent id.',
  kind: 'Only sessions of this kind: main, subagent (delegates), channel or other.',
});
const historyInput = described(chatHistoryParams, {
  sessionKey: 'The session to read, agent:<agentId>:<rest>.',
  limit: 'How many messages to return (1-200). Default 20.',
  cursor: 'next_cursor from a previous page, to read older messages; omit for the newest.',
  includeTools: 'Include tool calls and tool results. Default false.',
});

type ReadGateway = Pick<Gateway, 'sessionsList' | 'chatHistory'>;


export function createSessionsListTool(gw: ReadGateway): ToolDef<z.infer<typeof sessionsListParams>> {
  return {
    name: 'sessions_list',
    description:
      'List sessions, newest activity first: {sessions: [{sessionKey, agentId, kind, label?, model, lastActivityAt, status, messageCount}], next_cursor}. Optional filters: agentId, kind (main|subagent|channel|other), limit (1-200), cursor.',
    inputSchema: listInput,
    execute: (input) => asToolData(() => gw.sessionsList(input)),
  };
}

export function createSessionsHistoryTool(gw: ReadGateway): ToolDef<z.infer<typeof chatHistoryParams>> {
  return {
    name: 'sessions_history',
    description:
      "Read a session's transcript, newest first: {messages, next_cursor}. Params: sessionKey, limit (1-200, default 20), cursor, includeTools.",
    inputSchema: historyInput,
    execute: (input) => asToolData(() => gw.chatHistory({ limit: 20, ...input })),
  };
}
