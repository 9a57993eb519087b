// sessions.compact (CONTRACT §3): compacts an idle session now with its agent's model; `agent_busy` while a run is active.
import { CrosstalkError } from '../errors';
import { createModelChain, FallbackTracker } from '../models/fallback';
import type { Compactor } from '../orchestrator/compaction';
import { functionTools } from '../orchestrator/model-step';
import type { Orchestrator } from '../orchestrator/orchestrator';
import type { Store } from '../store/store';
import type { AnyToolDef } from '../tools/types';

export async function compactSession(
  d: { store: Store; orchestrator: Orchestrator; tools: Map<string, AnyToolDef>; compactor?: Compactor },
  sessionKey: string,
): Promise<{ status: 'ok'; tokensBefore: number; tokensAfter: number }> {
  // Active here, or (PostgreSQL) on any other process: the store's run rows say so for all of them.
  const active = d.orchestrator.isActive(sessionKey) || (await d.store.activeRunOf(sessionKey));
  if (active) throw new CrosstalkError('agent_busy', `session ${sessionKey} has an active run${typeof active === 'string' ? ` (${active})` : ''}`);
  const session = (await d.store.getSession(sessionKey))!;
  const agent = d.orchestrator.agentForKey(sessionKey);
  const specs = session.model ? [session.model] : agent.models;
  const model = createModelChain(specs, { tracker: new FallbackTracker() });
  // The run loop's system prompt is not needed for the estimate's purpose here: the summary and kept rows are what change.
  const res = await d.compactor!.compact({ sessionKey, agentId: agent.id, modelSpec: specs[0]!, model, system: agent.system ?? '', tools: functionTools(d.tools) });
  if (res.status === 'error') throw new CrosstalkError('internal', `compaction failed: ${res.error}`);
  return { status: 'ok', tokensBefore: res.tokensBefore, tokensAfter: res.tokensAfter };
}
