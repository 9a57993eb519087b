// Restarts: a pending approval survives and resumes the run; a running run is marked interrupted; queued runs still run.
import { describe, expect, it } from 'vitest';
import { startTestServer, tmpDataDir, until } from '../testing/harness';


describe('restart', () => {
  it('a pending approval survives a restart; resolving it resumes the run to completion', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir });
    const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/reply checking\n/tool exec {"command":"echo resumed"}' });
    const p = await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
    await a.crash();

    const b = await startTestServer({ dataDir });
    try {
      const listed = (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:main' })).approvals;
      expect(listed).toEqual([p]);
      expect(await b.rpc('agent.wait', { runId, timeoutMs: 50 })).toEqual({ status: 'timeout' });
      // While parked, the session is busy: a new message queues behind it.
      const next = await b.rpc<{ runId: string; status: string }>('agent', { sessionKey: 'agent:main:main', message: 'after', queueMode: 'followup' });
      expect(next.status).toBe('queued');
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId });
      expect(w.status).toBe('ok');
      expect(w.response).toContain('"stdout":"resumed\\n"');
      expect(await b.rpc('agent.wait', { runId: next.runId })).toMatchObject({ status: 'ok', response: 'echo: after' });
      const h = await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true });
      expect(h.messages.reverse().map((m: any) => m.kind)).toEqual(['message', 'message', 'tool_call', 'tool_result', 'message', 'message', 'message']);
      // seq continues across the restart
      const seqs: number[] = [];
      const sub = b.rt.bus.subscribe({ runId }, 0);
      for (;;) {
        const ev = await sub.next();
        if (!ev) break;
        seqs.push(ev.seq);
        if (ev.stream === 'lifecycle' && ev.data.phase === 'end') break;
      }
      sub.close();
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await b.close();
    }
  });

  it('a run interrupted by a restart is marked so; queued messages still run', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir });
    const r1 = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/sleep 10000' });
    const r2 = await a.rpc<{ runId: string; status: string }>('agent', { sessionKey: 'agent:main:main', message: 'queued one', queueMode: 'followup' });
    expect(r2.status).toBe('queued');
    await new Promise((r) => setTimeout(r, 50));
    // Crash: the in-flight run never records its end.
    await a.rt.store.db.updateTable('runs').set({ status: 'running' }).where('id', '=', r1.runId).execute();
    expect((await a.rt.store.getRun(r1.runId))?.status).toBe('running');
    await a.crash();

    const b = await startTestServer({ dataDir });
    try {
      expect(await b.rpc('agent.wait', { runId: r1.runId })).toMatchObject({ status: 'error', error: 'interrupted by a restart' });
      expect(await b.rpc('agent.wait', { runId: r2.runId })).toMatchObject({ status: 'ok', response: 'echo: queued one' });
    } finally {
      await b.close();
    }
  });
});
