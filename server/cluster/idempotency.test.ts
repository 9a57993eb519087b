// Idempotency keys across processes and crashes (CONTRACT §3, issue 20 item 1): the same key sent to 3 processes on one
// PostgreSQL at the same moment starts one run (one user row, one answer) and reaches a channel API once; a process
// killed at a failpoint between accepting and answering leaves the key answered by another process with the same run.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDS, FAKES } from '../channels/testing/fake-apis';
import { type FakePlatform, startFakePlatform } from '../channels/testing/fake-platform';
import { rpcOrDead, startChildServer, tmpDataDir, until } from '../testing/harness';

type Child = Awaited<ReturnType<typeof startChildServer>>;
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';

const children: Child[] = [];
let tg: FakePlatform;
let configFile: string;
beforeAll(async () => {
  // A channel API that answers slowly, so requests for one key overlap in every process.
  tg = await startFakePlatform(async (req) => {
    // A text marked [slow] takes long enough for its sender to be paused past its liveness meanwhile.
    await new Promise((r) => setTimeout(r, String(req.body?.text ?? '').includes('[slow]') ? 1500 : 150));
    return FAKES.telegram!.handler(req);
  });
  const dir = tmpDataDir();
  configFile = path.join(dir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main' }], channels: { telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url } } }));
});
afterAll(async () => {
  for (const c of children) c.kill();
  await tg?.close();
});

async function boot(env: Record<string, string>, dataDir = tmpDataDir()): Promise<Child> {
  const c = await startChildServer({ dataDir, configFile, env });
  children.push(c);
  return c;
}

const call = rpcOrDead;

const history = async (c: Child, sessionKey: string) => (await c.rpc<{ messages: any[] }>('chat.history', { sessionKey, limit: 200, includeTools: true })).messages.reverse();
const sendsOf = (text: string) => tg.requests.filter((q) => q.path.endsWith('/sendMessage') && q.body.text === text).length;
const pgEnv = (schema: string, extra: Record<string, string> = {}) => ({ DATABASE_URL: PG_URL, CROSSTALK_TEST_PG_SCHEMA: schema, CROSSTALK_PG_POOL: '4', ...extra });

describe('idempotency keys on 3 PostgreSQL processes', () => {
  const schema = `t_idem_${crypto.randomBytes(4).toString('hex')}`;
  let procs: Child[];
  beforeAll(async () => {
    procs = [await boot(pgEnv(schema))];
    procs.push(...(await Promise.all([boot(pgEnv(schema)), boot(pgEnv(schema))])));
  }, 60_000);

  it('agent: the same key at the same moment on 3 processes starts one run, writes one user row, and gives all three one answer', async () => {
    const keys = Array.from({ length: 10 }, (_, i) => ({ key: `k-${i}-${crypto.randomUUID()}`, sessionKey: `agent:main:idem-${i}`, message: `/sleep 100\n/reply once ${i}` }));
    const answers = await Promise.all(keys.map((k) => Promise.all(procs.map((p) => call(p.url, 'agent', { sessionKey: k.sessionKey, message: k.message, idempotencyKey: k.key })))));
    for (const [i, k] of keys.entries()) {
      const got = answers[i]!;
      expect(got.map((a) => a.error)).toEqual([undefined, undefined, undefined]);
      expect(new Set(got.map((a) => JSON.stringify(a.result))).size).toBe(1);
      const { runId } = got[0]!.result;
      expect(await procs[1]!.rpc('agent.wait', { runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: `once ${i}` });
      const h = await history(procs[2]!, k.sessionKey);
      expect(h.filter((m) => m.role === 'user').map((m) => [m.content, m.runId])).toEqual([[k.message, runId]]);
      expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([`once ${i}`]);
    }
  }, 60_000);

  it('agent into a busy session (followup, steer): the same key on 3 processes at once is queued or steered once, with one answer', async () => {
    for (const queueMode of ['followup', 'steer'] as const) {
      const sessionKey = `agent:main:idem-busy-${queueMode}`;
      const busy = await procs[0]!.rpc<{ runId: string }>('agent', { sessionKey, message: '/sleep 1500\n/reply busy' });
      const params = { sessionKey, message: `/reply ${queueMode} once`, queueMode, idempotencyKey: `b-${queueMode}-${crypto.randomUUID()}` };
      const got = await Promise.all(procs.map((p) => call(p.url, 'agent', params)));
      expect(got.map((a) => a.error)).toEqual([undefined, undefined, undefined]);
      expect(new Set(got.map((a) => JSON.stringify(a.result))).size).toBe(1);
      expect(got[0]!.result.status).toBe(queueMode === 'steer' ? 'steered' : 'queued');
      if (queueMode === 'steer') expect(got[0]!.result.runId).toBe(busy.runId);
      await procs[1]!.rpc('agent.wait', { runId: got[0]!.result.runId, timeoutMs: 20_000 });
      await procs[1]!.rpc('agent.wait', { runId: busy.runId, timeoutMs: 20_000 });
      const h = await history(procs[2]!, sessionKey);
      expect(h.filter((m) => m.content === params.message).length).toBe(1);
    }
  }, 60_000);

  it('send: the same key at the same moment on 3 processes reaches the channel API once; all three get its answer', async () => {
    const keys = Array.from({ length: 10 }, (_, i) => ({ key: `s-${i}-${crypto.randomUUID()}`, text: `hello ${i} ${crypto.randomUUID()}` }));
    const answers = await Promise.all(keys.map((k) => Promise.all(procs.map((p) => call(p.url, 'send', { channel: 'telegram', to: '4242', message: k.text, idempotencyKey: k.key })))));
    for (const [i, k] of keys.entries()) {
      const got = answers[i]!;
      expect(got.map((a) => a.error)).toEqual([undefined, undefined, undefined]);
      expect(new Set(got.map((a) => JSON.stringify(a.result))).size).toBe(1);
      expect(sendsOf(k.text)).toBe(1);
    }
    const mirrored = (await history(procs[0]!, 'agent:main:telegram:direct:4242')).filter((m) => m.kind === 'mirror');
    for (const k of keys) expect(mirrored.filter((m) => m.content === k.text).length).toBe(1);
  }, 60_000);
});

describe('idempotency keys after a process dies between accepting and answering (PostgreSQL)', () => {
  it('agent: the key sent to another process gets the same run, answered once', async () => {
    const schema = `t_idemk_${crypto.randomBytes(4).toString('hex')}`;
    const a = await boot(pgEnv(schema, { CROSSTALK_FAILPOINTS: 'idempotency.accepted' }));
    const b = await boot(pgEnv(schema));
    const params = { sessionKey: 'agent:main:idem-crash', message: '/sleep 300\n/reply survived', idempotencyKey: `c-${crypto.randomUUID()}` };
    expect(await call(a.url, 'agent', params)).toEqual({ dead: true });
    expect(await a.exited).toBe(137);
    const r = await call(b.url, 'agent', params);
    expect(r.error).toBeUndefined();
    expect(await b.rpc('agent.wait', { runId: r.result.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'survived' });
    expect((await call(b.url, 'agent', params)).result).toEqual(r.result);
    const h = await history(b, params.sessionKey);
    expect(h.filter((m) => m.role === 'user').map((m) => [m.content, m.runId])).toEqual([[params.message, r.result.runId]]);
    expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['survived']);
  }, 60_000);

  it('send: a claimant killed before the channel call; the retry on another process delivers once', async () => {
    const schema = `t_idems_${crypto.randomBytes(4).toString('hex')}`;
    const a = await boot(pgEnv(schema, { CROSSTALK_FAILPOINTS: 'send.claimed' }));
    const b = await boot(pgEnv(schema));
    const text = `after a crash ${crypto.randomUUID()}`;
    const params = { channel: 'telegram', to: '4242', message: text, idempotencyKey: `sc-${crypto.randomUUID()}` };
    expect(await call(a.url, 'send', params)).toEqual({ dead: true });
    expect(await a.exited).toBe(137);
    // B may first see A still registered as alive (its death is noticed by the cluster's sweep): it then says so.
    const r = await until(async () => {
      const x = await call(b.url, 'send', params);
      return x.result ? x : x.error?.data?.code === 'timeout' ? null : x;
    }, 30_000);
    expect(r.error).toBeUndefined();
    expect((await call(b.url, 'send', params)).result).toEqual(r.result);
    expect(sendsOf(text)).toBe(1);
  }, 60_000);
});

describe('idempotency keys after a process is paused past its liveness (PostgreSQL)', () => {
  it('send: the paused claimant, resumed after another process took the key over and delivered, answers what the key recorded', async () => {
    const schema = `t_idemp_${crypto.randomBytes(4).toString('hex')}`;
    const quick = { CROSSTALK_HEARTBEAT_MS: '200', CROSSTALK_DEAD_AFTER_MS: '1500', CROSSTALK_SWEEP_MS: '100' };
    const a = await boot(pgEnv(schema, quick));
    const b = await boot(pgEnv(schema, quick));
    const text = `paused [slow] ${crypto.randomUUID()}`;
    const params = { channel: 'telegram', to: '4242', message: text, idempotencyKey: `sp-${crypto.randomUUID()}` };
    const first = call(a.url, 'send', params);
    await until(() => sendsOf(text) === 1);
    a.child.kill('SIGSTOP'); // paused mid-call: declared dead, its claim taken over
    try {
      const r = await until(async () => {
        const x = await call(b.url, 'send', params);
        return x.result ? x : x.error?.data?.code === 'timeout' ? null : x;
      }, 30_000);
      expect(r.error).toBeUndefined();
      a.child.kill('SIGCONT');
      // Before: A answered the messageId of its own call, which the key never recorded and no repeat returns.
      expect((await first).result).toEqual(r.result);
      expect((await call(b.url, 'send', params)).result).toEqual(r.result);
    } finally {
      a.child.kill('SIGCONT');
    }
  }, 60_000);
});

describe('idempotency keys after a crash on SQLite', () => {
  it('agent: the restarted process answers the key with the run the killed one accepted, run once', async () => {
    const dataDir = tmpDataDir();
    const a = await boot({ CROSSTALK_FAILPOINTS: 'idempotency.accepted' }, dataDir);
    const params = { sessionKey: 'agent:main:idem-sqlite', message: '/sleep 300\n/reply survived', idempotencyKey: `q-${crypto.randomUUID()}` };
    expect(await call(a.url, 'agent', params)).toEqual({ dead: true });
    expect(await a.exited).toBe(137);
    const b = await boot({}, dataDir);
    const r = await call(b.url, 'agent', params);
    expect(r.error).toBeUndefined();
    expect(await b.rpc('agent.wait', { runId: r.result.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'survived' });
    const h = await history(b, params.sessionKey);
    expect(h.filter((m) => m.role === 'user').map((m) => [m.content, m.runId])).toEqual([[params.message, r.result.runId]]);
    expect(h.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['survived']);
    b.kill();
    await b.exited;
  }, 60_000);

  it('send: a claim left pending by the killed process is taken over after the restart and delivered once', async () => {
    const dataDir = tmpDataDir();
    const a = await boot({ CROSSTALK_FAILPOINTS: 'send.claimed' }, dataDir);
    const text = `sqlite after a crash ${crypto.randomUUID()}`;
    const params = { channel: 'telegram', to: '4242', message: text, idempotencyKey: `qs-${crypto.randomUUID()}` };
    expect(await call(a.url, 'send', params)).toEqual({ dead: true });
    expect(await a.exited).toBe(137);
    const b = await boot({}, dataDir);
    const r = await call(b.url, 'send', params);
    expect(r.error).toBeUndefined();
    expect((await call(b.url, 'send', params)).result).toEqual(r.result);
    expect(sendsOf(text)).toBe(1);
    b.kill();
    await b.exited;
  }, 60_000);
});
