// (g) Detached delegate end → parent callback turn start, read from the event log of both sessions.
import { type RpcClient, replayUntil, turn } from './http';
import type { ServerHandle } from './server';
import { summarize, type Summary } from './stats';

export interface DelegateResult {
  samples: number;
  latency: Summary;
  failed: number;
  firstFailure?: string;
}

interface Ev {
  runId: string;
  stream: string;
  ts: string;
  data?: { phase?: string };
}

/** Whether the server offers delegation (the tool is in the default agent's tool list). */
export async function delegationAvailable(rpc: RpcClient): Promise<boolean> {
  const { agents } = await rpc.call<{ agents: Array<{ agentId: string; tools: Record<string, string> }> }>('agents.list', {});
  return agents.some((a) => a.tools && 'delegate_agent' in a.tools) && agents.some((a) => a.agentId === 'researcher');
}

/**
 * Each sample: a parent session's turn calls `delegate_agent` detached (the scripted model's `/tool`
 * directive); the delegate sleeps briefly so the parent's turn is over when it ends; then the
 * latency is the parent's callback run `lifecycle start` ts minus the delegate run's `lifecycle end`
 * ts (both server timestamps, 1 ms resolution).
 */
export async function delegateCallback(server: ServerHandle, rpc: RpcClient, samples: number): Promise<DelegateResult> {
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  const fail = (why: string) => {
    failed++;
    firstFailure ??= why;
  };
  for (let i = 0; i < samples + 2; i++) {
    const parent = `agent:main:bench-delegate-${i}`;
    const args = JSON.stringify({ agent_id: 'researcher', prompt: `/sleep 50\n/reply delegate done ${i}`, mode: 'detached' });
    const first = await rpc.call<{ runId: string }>('agent', { sessionKey: parent, message: `/tool delegate_agent ${args}` });
    const w = await rpc.call<{ status: string; response?: string }>('agent.wait', { runId: first.runId, timeoutMs: 30_000 });
    const m = /delegate_agent: (\{.*\})/.exec(w.response ?? '');
    const accepted = m ? (JSON.parse(m[1]!) as { status?: string; run_id?: string }) : undefined;
    if (w.status !== 'ok' || accepted?.status !== 'accepted' || !accepted.run_id) {
      fail(`parent turn: ${w.status} ${(w.response ?? '').slice(0, 160)}`);
      continue;
    }
    const delegateRun = accepted.run_id;
    const base = `${server.baseUrl}/api/gateway/events`;
    const endTs = await replayUntil<string>(`${base}?runId=${encodeURIComponent(delegateRun)}`, server.token, (e) => {
      const ev = e as Ev;
      return ev.stream === 'lifecycle' && (ev.data?.phase === 'end' || ev.data?.phase === 'error') ? ev.ts : undefined;
    }, 10_000);
    if (!endTs) {
      fail('delegate run did not end within 10 s');
      continue;
    }
    const startTs = await replayUntil<string>(`${base}?sessionKey=${encodeURIComponent(parent)}`, server.token, (e) => {
      const ev = e as Ev;
      return ev.stream === 'lifecycle' && ev.data?.phase === 'start' && ev.runId !== first.runId ? ev.ts : undefined;
    }, 10_000);
    if (!startTs) {
      fail('no callback turn in the parent within 10 s');
      continue;
    }
    if (i >= 2) latencies.push(Date.parse(startTs) - Date.parse(endTs)); // the first two warm the path
  }
  // Let the last callback turns finish before the caller moves on.
  await turn(rpc, 'agent:main:bench-delegate-settle', 'settle');
  return { samples: latencies.length, latency: summarize(latencies), failed, firstFailure };
}
