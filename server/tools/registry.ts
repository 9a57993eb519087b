// The tool registry: every built-in tool, made by its factory with injected dependencies.
import { type CrosstalkConfig, mcpServerOf } from '../config';
import type { EventBus } from '../events/bus';
import type { Gateway } from '../gateway/types';
import type { Metrics } from '../metrics';
import type { ChannelService } from '../channels';
import type { Delegates } from '../orchestrator/delegates';
import type { Orchestrator } from '../orchestrator/orchestrator';
import type { Store } from '../store/store';
import { createDelegateAgentTool, createDelegateSessionsTool } from './delegate';
import { createExecTool } from './exec';
import { createMessageTool } from './message';
import { createSendMessageTool } from './send-message';
import { createSessionsHistoryTool, createSessionsListTool } from './sessions-read';
import { createAgentsMessageTool, createSessionsSendTool } from './sessions-send';
import type { AnyToolDef } from './types';

export interface ToolDeps {
  config: CrosstalkConfig;
  store: Store;
  bus: EventBus;
  metrics: Metrics;
  gateway: Pick<Gateway, 'sessionsList' | 'chatHistory'>;
  orchestrator: () => Orchestrator;
  delegates: () => Delegates;
  channels: () => ChannelService;
  /** Session links for usage roll-ups (sessions a session starts by messaging them). */
  usage?: import('./sessions-send').SendDeps['usage'];
  /** Tools contributed by other modules (channels' `message`, delegation). */
  extra?: AnyToolDef[];
}

/** Fills `into` (the map the orchestrator already holds) with every tool. */
export function registerTools(into: Map<string, AnyToolDef>, deps: ToolDeps): Map<string, AnyToolDef> {
  const send = { orchestrator: deps.orchestrator, config: deps.config, usage: deps.usage };
  const tools: AnyToolDef[] = [
    createExecTool(),
    createSessionsListTool(deps.gateway),
    createSessionsHistoryTool(deps.gateway),
    createSendMessageTool(deps),
    createSessionsSendTool(send),
    createAgentsMessageTool(send),
    createDelegateAgentTool(deps.delegates),
    createDelegateSessionsTool(deps.delegates),
    createMessageTool(deps.channels),
    ...(deps.extra ?? []),
  ];
  for (const t of tools) into.set(t.name, t);
  return into;
}

/**
 * The policy keys of each agent's `tools` and `channelTools` that name no tool (`"*"` aside; an `mcp__<server>__…` key, no configured server), as
 * `agents.<i>.tools.<name>`: a misspelt `{"exce": "deny"}` denies nothing, so the start warns about it.
 */
export function unknownToolKeys(config: Pick<CrosstalkConfig, 'agents'> & { mcp?: { servers?: Record<string, unknown> } }, tools: ReadonlyMap<string, unknown>): string[] {
  const out: string[] = [];
  const servers = config.mcp?.servers ?? {};
  // An MCP name is known by its server (its tools are listed only once it connects): `mcp__<server>__…` of a server
  // that is not configured names nothing.
  const known = (k: string) => {
    const server = mcpServerOf(k);
    return server !== undefined ? Object.hasOwn(servers, server) : tools.has(k);
  };
  config.agents.forEach((a, i) => {
    for (const [where, map] of [['tools', a.tools], ['channelTools', a.channelTools]] as const) {
      for (const k of Object.keys(map ?? {})) if (k !== '*' && !known(k)) out.push(`agents.${i}.${where}.${k}`);
    }
  });
  return out;
}
