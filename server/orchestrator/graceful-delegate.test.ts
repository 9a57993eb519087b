// A graceful stop while a run waits on a standard delegate that cannot end in this process: the stop ends (the
// wait is handed over, not awaited for its 30 minutes), the delegate's session is not cancelled, and after a restart
// the re-driven caller gets the delegate's answer (seen in the fault suite: a SIGTERM'd process that never exited).
import { describe, expect, it } from 'vitest';
import { startTestServer, tmpDataDir, until } from '../testing/harness';

const tool = (name: string, args: unknown) => `/tool ${name} ${JSON.stringify(args)}`;
const config = { agents: [{ id: 'main' }, { id: 'researcher' }] };

describe('a graceful stop while a run waits on its delegate', () => {
  it('hands the waiting run over instead of waiting for it, leaves the delegate as it was, and the restart answers it', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir, config });
    const parent = 'agent:main:graceful-delegate';
    // A standard delegate whose run waits on an approval: it cannot end in this process once the stop begins.
    const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: parent, message: tool('delegate_agent', { agent_id: 'researcher', prompt: tool('exec', { command: 'echo from the delegate' }) }) });
    const pending = await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
    const child = pending.runId as string;

    // The stop: before the fix it cancelled the delegate (`interrupted`) or waited on it for 30 minutes.
    let stopped = false;
    await Promise.race([a.rt.orchestrator.shutdown({ graceMs: 100 }).then(() => (stopped = true)), new Promise((r) => setTimeout(r, 20_000))]);
    expect(stopped).toBe(true);
    // Nothing was ended by the stop: the caller and its delegate are left for the next start.
    expect((await a.rt.store.getRun(runId))?.status).toBe('running');
    expect((await a.rt.store.getRun(child))?.status).toBe('waiting_approval');
    await a.close();

    const b = await startTestServer({ dataDir, config });
    try {
      const again = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
      expect(again.approvalId).toBe(pending.approvalId);
      await b.rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 30_000 });
      expect(w.status).toBe('ok');
      expect(JSON.parse(w.response.slice('delegate_agent: '.length))).toMatchObject({ status: 'ok', run_id: child, response: expect.stringContaining('from the delegate') });
    } finally {
      await b.close();
    }
  }, 120_000);

  it('a detached follow-up still running at a stop gets no "completed" row from the stop', async () => {
    const a = await startTestServer({ dataDir: tmpDataDir(), config });
    try {
      const parent = 'agent:main:graceful-detached';
      const call = async (args: unknown) => {
        const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: parent, message: tool('delegate_agent', args) });
        const w = await a.rpc<{ status: string; response: string }>('agent.wait', { runId });
        return JSON.parse(w.response.slice('delegate_agent: '.length)) as { conversation_id: string; run_id: string };
      };
      const first = await call({ agent_id: 'researcher', prompt: '/reply one' });
      await until(async () => (await a.rt.store.getRun(first.run_id))?.status === 'ok');
      // A detached follow-up that waits on an approval when the process stops.
      const follow = await call({ conversation_id: first.conversation_id, mode: 'detached', prompt: tool('exec', { command: 'echo later' }) });
      await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', {})).approvals.length === 1);
      await a.rt.orchestrator.shutdown({ graceMs: 100 });
      a.rt.orchestrator.endWaits(); // a graceful stop's last step: whoever waits is told `timeout`
      await new Promise((r) => setTimeout(r, 300));
      const rows = (await a.rpc<{ messages: any[] }>('chat.history', { sessionKey: parent, limit: 200 })).messages;
      expect(rows.filter((m) => m.kind === 'delegate_follow_up_started').map((m) => m.meta?.run_id)).toEqual([follow.run_id]);
      // Before the fix the stop wrote "follow-up completed" with status timeout, though the follow-up goes on.
      expect(rows.filter((m) => m.kind === 'delegate_follow_up_completed')).toEqual([]);
    } finally {
      await a.close();
    }
  }, 120_000);
});
