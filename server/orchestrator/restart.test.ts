// Restarts: a pending approval survives and resumes the run; a run in flight is re-driven; queued runs still run.
import { describe, expect, it, vi } from 'vitest';
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
      const sub = b.rt.bus.subscribe({ runId }, { id: 0 });
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

  it('a run in flight at a crash is re-driven from its last completed step; queued messages still run after it', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir, config: { agents: [{ id: 'main', tools: { exec: 'auto' } }] } });
    // Step 1 (a tool call) completes; step 2 (the model answering its result) is in flight when the process dies.
    const r1 = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/tool sessions_list {"limit":1}\n/sleep 400' });
    const r2 = await a.rpc<{ runId: string; status: string }>('agent', { sessionKey: 'agent:main:main', message: 'queued one', queueMode: 'followup' });
    expect(r2.status).toBe('queued');
    await until(async () => (await a.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true })).messages.some((m) => m.kind === 'tool_result'));
    await a.crash();

    const b = await startTestServer({ dataDir, config: { agents: [{ id: 'main', tools: { exec: 'auto' } }] } });
    try {
      const w1 = await b.rpc<{ status: string; response: string }>('agent.wait', { runId: r1.runId });
      expect(w1.status).toBe('ok');
      expect(w1.response).toMatch(/^sessions_list: /);
      expect(await b.rpc('agent.wait', { runId: r2.runId })).toMatchObject({ status: 'ok', response: 'echo: queued one' });
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', includeTools: true })).messages.reverse();
      // Nothing doubled: one input row, one tool call and result, one reply for the re-driven run.
      expect(h.filter((m) => m.runId === r1.runId).map((m) => m.kind)).toEqual(['message', 'tool_call', 'tool_result', 'message']);
    } finally {
      await b.close();
    }
  });

  it('a step whose calls were half answered at a crash: the re-driven results join the others, one line per result', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir });
    // sessions_list answers at once; exec (policy ask) waits on its approval when the process dies.
    const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:half', message: '/tool sessions_list {"limit":1}\n/tool exec {"command":"echo second"}' });
    const p = await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
    await until(async () => (await a.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:half', includeTools: true })).messages.some((m) => m.kind === 'tool_result'));
    await a.crash();
    const b = await startTestServer({ dataDir });
    try {
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId });
      expect(w.status).toBe('ok');
      // The scripted model answers a step's results one line each, in call order (CONTRACT §2): both, not the re-driven one alone.
      const lines = w.response.split('\n');
      expect(lines.map((l) => l.split(':')[0])).toEqual(['sessions_list', 'exec']);
      expect(lines[1]).toContain('"stdout":"second\\n"');
    } finally {
      await b.close();
    }
  });

  it('a non-idempotent tool call in flight at a crash answers the model `interrupted` instead of running twice', async () => {
    const dataDir = tmpDataDir();
    const config = { agents: [{ id: 'main', tools: { exec: 'auto' } }] };
    const a = await startTestServer({ dataDir, config });
    const r = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:main', message: '/tool exec {"command":"echo ran >> ran.txt; sleep 2"}' });
    await until(async () => (await a.rt.store.toolStarted(r.runId, (await a.rt.store.history({ sessionKey: 'agent:main:main', limit: 5, includeTools: true })).find((m) => m.kind === 'tool_call')?.tool_call_id ?? '')));
    const ends = vi.spyOn(a.rt.store, 'finishRun');
    const rows = vi.spyOn(a.rt.store, 'appendMessages');
    const started = Date.now();
    await a.crash();
    const b = await startTestServer({ dataDir, config });
    try {
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId: r.runId });
      expect(w.status).toBe('ok');
      expect(w.response).toContain('"code":"interrupted"');
      // The crashed process wrote nothing more once its command ended (before, its run went on in this test process
      // and wrote the result and its end into the closed store, during whichever file ran next in this worker).
      await new Promise((res) => setTimeout(res, Math.max(0, started + 2500 - Date.now())));
      expect(rows).not.toHaveBeenCalled();
      expect(ends).not.toHaveBeenCalled();
    } finally {
      await b.close();
    }
  });

  it('a re-driven step that also posted with send_message is not made again: nothing is posted or run twice (probe W)', async () => {
    // Before: the prompt rebuilt from the transcript ended with the step's persona post (moved after the results), the
    // model answered that as if the step had not happened, and the whole step ran again under new call ids: the post
    // was made twice and the command ran again after its first call had answered `interrupted`.
    const dataDir = tmpDataDir();
    const config = { agents: [{ id: 'main', tools: { exec: 'auto' } }] };
    const a = await startTestServer({ dataDir, config });
    const key = 'agent:main:posted-once';
    const r = await a.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool send_message {"content":"posted-once"}\n/tool exec {"command":"echo ran >> ran-once.txt; sleep 2"}' });
    const execCall = async () => (await a.rt.store.history({ sessionKey: key, limit: 10, includeTools: true })).find((m) => m.kind === 'tool_call' && m.tool_name === 'exec')?.tool_call_id ?? '';
    // The post is made and the command is running (the step's calls run side by side).
    await until(async () => (await a.rt.store.toolStarted(r.runId, await execCall())) && (await a.rt.store.history({ sessionKey: key, limit: 10, includeTools: false })).some((m) => m.content === 'posted-once'));
    await a.crash();
    const b = await startTestServer({ dataDir, config });
    try {
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId: r.runId });
      expect(w.status).toBe('ok');
      expect(w.response).toContain('"code":"interrupted"');
      const h = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, includeTools: true })).messages.reverse();
      expect(h.filter((m) => m.content === 'posted-once')).toHaveLength(1);
      expect(h.filter((m) => m.kind === 'tool_call').map((m) => m.tool.name)).toEqual(['send_message', 'exec']);
      expect(h.filter((m) => m.kind === 'tool_result')).toHaveLength(2);
    } finally {
      await b.close();
    }
  });

  it('a graceful stop (close, not crash) keeps a pending approval and re-drives the paused run on the next start', async () => {
    const dataDir = tmpDataDir();
    const a = await startTestServer({ dataDir });
    const { runId } = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:graceful', message: '/tool exec {"command":"echo after a clean stop"}' });
    const p = await until(async () => (await a.rpc<{ approvals: any[] }>('approvals.list', {})).approvals[0]);
    const sleeping = await a.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:graceful-sleep', message: '/sleep 300\n/reply woke' });
    await a.close();

    const b = await startTestServer({ dataDir });
    try {
      // Not cancelled by the stop: the same approval is still pending, and resolving it finishes the run.
      expect((await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: 'agent:main:graceful' })).approvals).toEqual([p]);
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'allow_once' });
      const w = await b.rpc<{ status: string; response: string }>('agent.wait', { runId });
      expect(w.status).toBe('ok');
      expect(w.response).toContain('after a clean stop');
      const h = await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:graceful', includeTools: true });
      expect(h.messages.filter((m: any) => m.kind === 'tool_result')).toHaveLength(1);
      // A run in flight at the stop is re-driven on the next start (its model step is asked again).
      expect(await b.rpc('agent.wait', { runId: sleeping.runId })).toMatchObject({ status: 'ok', response: 'woke' });
    } finally {
      await b.close();
    }
  });
});
