// The tool registry: every built-in tool, made by its factory with injected dependencies.
import type { Gateway } from '../gateway/types';
import { createExecTool } from './exec';
import { createSessionsHistoryTool, createSessionsListTool } from './sessions-read';
import type { AnyToolDef } from './types';

export interface ToolDeps {
  gateway: Pick<Gateway, 'sessionsList' | 'chatHistory'>;
}

export function createToolRegistry(deps: ToolDeps): Map<string, AnyToolDef> {
  const tools: AnyToolDef[] = [createExecTool(), createSessionsListTool(deps.gateway), createSessionsHistoryTool(deps.gateway)];
  return new Map(tools.map((t) => [t.name, t]));
}
