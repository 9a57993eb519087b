// sessions_list and sessions_history: read-only views of the gateway's sessions.list and chat.history for the model.
import { z } from 'zod';
import { asToolData } from '../errors';
import type { Gateway } from '../gateway/types';
import { chatHistoryParams, sessionsListParams } from '../gateway/schemas';
import type { ToolDef } from './types';

type ReadGateway = Pick<Gateway, 'sessionsList' | 'chatHistory'>;


export function createSessionsListTool(gw: ReadGateway): ToolDef<z.infer<typeof sessionsListParams>> {
  return {
    name: 'sessions_list',
    description:
      'List sessions, newest activity first: {sessions: [{sessionKey, agentId, kind, label?, model, lastActivityAt, status, messageCount}], next_cursor}. Optional filters: agentId, kind (main|subagent|channel|other), limit (1-200), cursor.',
    inputSchema: sessionsListParams,
    execute: (input) => asToolData(() => gw.sessionsList(input)),
  };
}

export function createSessionsHistoryTool(gw: ReadGateway): ToolDef<z.infer<typeof chatHistoryParams>> {
  return {
    name: 'sessions_history',
    description:
      "Read a session's transcript, newest first: {messages, next_cursor}. Params: sessionKey, limit (1-200, default 20), cursor, includeTools.",
    inputSchema: chatHistoryParams,
    execute: (input) => asToolData(() => gw.chatHistory({ limit: 20, ...input })),
  };
}
