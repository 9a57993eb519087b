// A run still going on in a process that holds no fence for its session any more (its state was dropped: released
// idle, declared dead, dropped while it loaded) writes nothing beside the lease holder's re-drive (PostgreSQL): its
// start, its step rows, its tool-start claim, its status, its send_message rows, its compaction row and its events are
// all refused, not written unchecked. One case per write; each fails with that write's guard (server/store/fences.ts) taken out.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { expandRow } from '../store/event-fold';
import { toTranscriptMessage } from '../store/store';
import { startTestServer, type TestServer, until } from '../testing/harness';
import type { AnyToolDef } from '../tools/types';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const config = { agents: [{ id: 'main', tools: { exec: 'ask' } }] };

type Started = { runId: string; status: string };

async function pair(cfg: Record<string, unknown> = config): Promise<[TestServer, TestServer]> {
  const schema = `t_uf_${crypto.randomBytes(4).toString('hex')}`;
  const a = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: cfg });
  const b = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: cfg });
  return [a, b];
}

/** B takes the session over (as the sweep does for a process it declared dead): a new epoch, its unfinished runs loaded. */
async function takeOver(b: TestServer, key: string): Promise<void> {
  const claimed = await sql<{ epoch: string }>`update sessions set owner = ${b.rt.cluster!.id}, epoch = nextval('session_epochs') where key = ${key} returning epoch`.execute(b.rt.store.db);
  await (b.rt.orchestrator as any).adopt(key, Number(claimed.rows[0]!.epoch));
}

/** A's copy of the run has stopped and both buses have written what they had. */
async function settled(a: TestServer, b: TestServer, runId: string): Promise<void> {
  await until(() => !(a.rt.orchestrator as any).executions.has(runId), 30_000);
  await a.rt.bus.drain();
  await b.rt.bus.drain();
}

/** The session's transcript, oldest first, tool rows included. */
const history = async (s: TestServer, key: string) => (await s.rt.store.history({ sessionKey: key, limit: 100, includeTools: true })).reverse().map(toTranscriptMessage) as any[];

async function eventsOf(s: TestServer, runId: string) {
  const rows = await s.rt.store.db.selectFrom('events').selectAll().where('run_id', '=', runId).orderBy('id').execute();
  return rows.flatMap((r) => expandRow({ ...r, fold_id: r.fold_id ?? null }));
}

/** A tool with an effect of its own (not idempotent: its start is claimed), counted per server. */
function tallyTool(count: { n: number }): AnyToolDef {
  return {
    name: 'tally',
    description: 'counts its calls',
    inputSchema: z.object({}).passthrough(),
    async execute() {
      count.n++;
      return { counted: count.n };
    },
  } as AnyToolDef;
}

describe('a run whose session has no fence here writes nothing beside the lease holder’s (PostgreSQL)', () => {
  it('its events (deltas, a step’s usage) are dropped, not logged beside the re-drive’s: every seq once', async () => {
    const [a, b] = await pair();
    try {
      const key = 'agent:main:unfenced-events';
      // A step with text and a tool call: its deltas and usage are emitted before its rows are written (refused),
      // and flushed on their own after the run has stopped here (a run's end would take them along; not here).
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 3000\n/reply once\n/tool sessions_list' });
      await until(async () => (await b.rt.store.maxSeq(r.runId)) >= 2);
      a.rt.store.clearFence(key); // A's state was dropped while its copy of the run sleeps in its model step
      await takeOver(b, key);
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      await settled(a, b, r.runId);
      // A's copy streamed its deltas and its step's usage after it lost the fence: none of them is in the log.
      const seqs = (await eventsOf(b, r.runId)).map((e) => Number(e.seq));
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its step’s rows (a tool call and its result) are refused: the re-drive’s are the only ones', async () => {
    const [a, b] = await pair();
    try {
      const key = 'agent:main:unfenced-rows';
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 3000\n/tool sessions_list' });
      await until(async () => (await b.rt.store.maxSeq(r.runId)) >= 2);
      a.rt.store.clearFence(key);
      await takeOver(b, key);
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      await settled(a, b, r.runId);
      const h = await history(b, key);
      expect(h.filter((m) => m.kind === 'tool_call').length).toBe(1);
      expect(h.filter((m) => m.kind === 'tool_result').length).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its tool-start claim is refused: the tool runs once, in the re-drive, not `interrupted` by a zombie’s claim', async () => {
    const [a, b] = await pair();
    const inA = { n: 0 };
    const inB = { n: 0 };
    a.rt.tools.set('tally', tallyTool(inA));
    b.rt.tools.set('tally', tallyTool(inB));
    try {
      const key = 'agent:main:unfenced-claim';
      const store = a.rt.store as any;
      const claim = store.markToolStarted.bind(store);
      let hooked = false;
      // A's state is dropped just before its run claims the call's start; B takes the session over right after.
      store.markToolStarted = async (runId: string, callId: string, sessionKey: string) => {
        if (hooked || sessionKey !== key) return claim(runId, callId, sessionKey);
        hooked = true;
        a.rt.store.clearFence(key);
        try {
          return await claim(runId, callId, sessionKey);
        } finally {
          await takeOver(b, key);
        }
      };
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/tool tally' });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      await settled(a, b, r.runId);
      expect(hooked).toBe(true);
      expect([inA.n, inB.n]).toEqual([0, 1]);
      const results = (await history(b, key)).filter((m) => m.kind === 'tool_result');
      expect(results.map((m) => m.tool.result)).toEqual([{ counted: 1 }]);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its status write (waiting on an approval) is refused: the run the lease holder ended stays ended', async () => {
    const [a, b] = await pair();
    try {
      const key = 'agent:main:unfenced-status';
      const store = a.rt.store as any;
      const update = store.updateRunFenced.bind(store);
      let hooked = false;
      let release!: () => void;
      const released = new Promise<void>((res) => (release = res));
      let wrote!: (outcome: string) => void;
      const written = new Promise<string>((res) => (wrote = res));
      // A's run asked for the approval; before it records that it waits, its state is dropped, B takes the session
      // over and ends the run; only then does A's write go out.
      store.updateRunFenced = async (id: string, sessionKey: string, fields: Record<string, unknown>) => {
        if (hooked || sessionKey !== key || fields.status !== 'waiting_approval') return update(id, sessionKey, fields);
        hooked = true;
        a.rt.store.clearFence(key);
        await takeOver(b, key);
        await released;
        try {
          await update(id, sessionKey, fields);
          wrote('written');
        } catch (e) {
          wrote((e as Error).name);
          throw e;
        }
      };
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/tool exec {"command":"echo never"}' });
      await until(() => hooked);
      const p = await until(async () => (await b.rpc<{ approvals: any[] }>('approvals.list', { sessionKey: key })).approvals[0]);
      await b.rpc('approvals.resolve', { approvalId: p.approvalId, decision: 'deny' });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      release();
      expect(await written).toBe('FencedError');
      expect((await b.rt.store.getRun(r.runId))?.status).toBe('ok');
      await settled(a, b, r.runId);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its start of a queued run is refused: the lease holder starts it, once', async () => {
    const [a, b] = await pair();
    try {
      const key = 'agent:main:unfenced-start';
      const store = a.rt.store as any;
      const start = store.startRun.bind(store);
      let second = '';
      let hooked = false;
      store.startRun = async (runId: string, sessionKey: string, msgs: unknown[]) => {
        if (runId !== second) return start(runId, sessionKey, msgs);
        hooked = true;
        a.rt.store.clearFence(key); // A's state is dropped as it starts the queued run; B takes the session over
        try {
          return await start(runId, sessionKey, msgs);
        } finally {
          await takeOver(b, key);
        }
      };
      const first = await a.rpc<Started>('agent', { sessionKey: key, message: '/sleep 1500\n/reply one' });
      const next = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply two', queueMode: 'followup' });
      second = next.runId;
      expect(next.status).toBe('queued');
      expect(await a.rpc('agent.wait', { runId: first.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'one' });
      expect(await b.rpc('agent.wait', { runId: next.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'two' });
      await settled(a, b, next.runId);
      expect(hooked).toBe(true);
      // Started by B (its start event), not by A's unchecked start that B would then only resume.
      const phases = (await eventsOf(b, next.runId)).filter((e) => e.stream === 'lifecycle').map((e) => JSON.parse(e.data).phase);
      expect(phases.filter((x) => x !== 'step')).toEqual(['start', 'end']);
      expect((await history(b, key)).filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['/sleep 1500\n/reply one', '/reply two']);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its send_message row is refused: nothing of the zombie’s call lands in the transcript', async () => {
    const [a, b] = await pair();
    try {
      const key = 'agent:main:unfenced-send';
      const tool = a.rt.tools.get('send_message')!;
      let hooked = false;
      // A's state is dropped just as its run's send_message call writes; B takes the session over after it.
      a.rt.tools.set('send_message', {
        ...tool,
        async execute(input: any, ctx: any) {
          if (hooked || ctx.sessionKey !== key) return tool.execute(input, ctx);
          hooked = true;
          a.rt.store.clearFence(key);
          try {
            return await tool.execute(input, ctx);
          } finally {
            await takeOver(b, key);
          }
        },
      } as AnyToolDef);
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/tool send_message {"content":"from the zombie"}' });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok' });
      await settled(a, b, r.runId);
      expect(hooked).toBe(true);
      expect((await history(b, key)).filter((m) => m.content === 'from the zombie')).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);

  it('its compaction row (compacting before a step) is refused: the lease holder’s re-drive compacts, once', async () => {
    // More rows than the context holds: the run's first step compacts whatever the token estimate (corrected by the
    // usage earlier cases' runs reported in this process) says.
    const [a, b] = await pair({ ...config, session: { contextMessages: 8 }, compaction: { keepRecent: 4 } });
    try {
      const key = 'agent:main:unfenced-compaction';
      // Rows from before (written from outside any run).
      await a.rt.store.ensureSession({ key, agentId: 'main', kind: 'other' });
      for (let i = 0; i < 12; i++) {
        await a.rt.store.appendMessages([{ sessionKey: key, role: i % 2 ? 'assistant' : 'user', kind: 'message', content: `note ${i}: ${'lorem ipsum dolor sit amet '.repeat(80)}`, author: { type: 'user', id: 'u' } }]);
      }
      const compactor = a.rt.compactor as any;
      const summarize = compactor.summarize.bind(compactor);
      let hooked = false;
      // A's state is dropped while its run summarizes; B takes the session over, and its re-drive compacts first.
      compactor.summarize = async (...args: unknown[]) => {
        const out = await summarize(...args);
        if (!hooked) {
          hooked = true;
          a.rt.store.clearFence(key);
          await takeOver(b, key);
          await until(async () => (await b.rt.store.db.selectFrom('messages').select('id').where('session_key', '=', key).where('kind', '=', 'compaction').execute()).length > 0, 30_000);
        }
        return out;
      };
      const r = await a.rpc<Started>('agent', { sessionKey: key, message: '/reply after' });
      expect(await b.rpc('agent.wait', { runId: r.runId, timeoutMs: 60_000 })).toMatchObject({ status: 'ok', response: 'after' });
      await settled(a, b, r.runId);
      expect(hooked).toBe(true);
      expect((await history(b, key)).filter((m) => m.kind === 'compaction').length).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);
});
