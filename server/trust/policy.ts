// The tool policy a run gets from its trust: `tools` for the operator's runs, `channelTools` for channel senders' (never wider than a deny in `tools`).
import { type AgentConfig, policyIn, type ToolPolicy, toolPolicyFor } from '../config';
import type { Trust } from './trust';

/** Tools a channel-started run may use without asking, unless `channelTools` says otherwise. */
const CHANNEL_AUTO = new Set(['send_message']);

/** `channelTools` by exact name, then `mcp__<server>__*`, then `*`; default `ask` for everything but send_message. */
export function channelPolicyFor(agent: AgentConfig, tool: string): ToolPolicy {
  return policyIn(agent.channelTools ?? {}, tool) ?? (CHANNEL_AUTO.has(tool) ? 'auto' : 'ask');
}

/**
 * A run's policy for a tool: the operator's runs `tools`; a channel sender's runs `channelTools` — except that what
 * `tools` denies stays denied (a sender never gets a tool the operator may not use).
 */
export function policyFor(agent: AgentConfig, tool: string, trust: Trust): ToolPolicy {
  const own = toolPolicyFor(agent, tool);
  if (trust.kind !== 'channel' || own === 'deny') return own;
  return channelPolicyFor(agent, tool);
}

/**
 * The name an `allow_always` rule is kept under: the operator's rules are the tool's name; a rule granted to a
 * channel sender's run holds only for that sender's runs in that session.
 */
export const toolRuleName = (tool: string, trust: Trust) => (trust.kind === 'operator' ? tool : `${tool}@${trust.channel}:${trust.peer}`);
