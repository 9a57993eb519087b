// `npm run bench` (issue 24 items 3–6, issue 22 item 6): latency budgets against a floor measured in the same run.
// One run, interleaved: a bare node:http floor, the built server on SQLite and on PostgreSQL (both `npm start`'s path),
// the OpenAI-wire fake in this process. Measures: inbound webhook channel → provider request; turns and 50 concurrent
// sessions against the floor; start to ready, idle RSS and RSS after the load; a PostgreSQL turn against a SQLite one;
// steer-mode callback latency; the PostgreSQL capacity model (statements, round trips and server CPU per turn;
// turns/s per PostgreSQL core at 1, 2 and 4 gateway processes). Writes its section of BENCHMARKS.md (`turns` markers).
// Flags: --quick (small counts), --no-md.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBareServer } from './lib/bare';
import { nowMs, RpcClient, replayUntil, turn } from './lib/http';
import { CLK_TCK, processTree } from './lib/proc';
import { startFakeOpenAI } from '../server/models/testing/fake-openai-server';
import { signWebhook } from '../server/webhooks/signature';
import { writeMarked } from './lib/sections';
import { dropStoreSchemas } from '../server/testing/pg-test-db';
import { afterWarm, makeTempDir, repoRoot, type ServerHandle, startServer } from './lib/server';
import { sleep, summarize, type Summary } from './lib/stats';
import { pgCapacity, pgStatementsPerTurn, type CapacityPoint, type StatementCount } from './lib/pg-capacity';
import { putSummaryRows, renderTurns, summaryRows, type SteerLatency, type TurnsResults, type TurnsSettings } from './lib/turns-report';

const quick = process.argv.includes('--quick');
const S: TurnsSettings = quick
  ? { turns: 60, warmup: 10, concRounds: 3, inbound: 40, steer: 8, starts: 2, capSeconds: 3, pgTurns: 60 }
  : { turns: 300, warmup: 30, concRounds: 10, inbound: 200, steer: 40, starts: 5, capSeconds: 8, pgTurns: 200 };
const PG = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const TOKEN = crypto.randomBytes(18).toString('base64url');
const HOOK_SECRET = 'bench-hook-secret';
const log = (m: string) => console.log(`[bench:turns] ${m}`);
const live = new Set<ServerHandle>();
process.on('exit', () => {
  for (const h of live) for (const pid of processTree(h.pid).reverse()) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
});
setTimeout(() => {
  console.error('[bench:turns] watchdog: still running after 20 min, giving up');
  process.exit(1);
}, 20 * 60_000).unref();

const loadAvg = () => os.loadavg().map((v) => v.toFixed(2)).join(' / ');

/** The config every server of this run reads: the default agents, a provider-backed `inbound` and `steerer` agent, the webhook channel routed to `inbound`. */
function writeConfig(dir: string): void {
  const config = {
    agents: [
      { id: 'main', name: 'Main' },
      { id: 'researcher', name: 'Researcher' },
      { id: 'writer', name: 'Writer' },
      { id: 'inbound', name: 'Inbound', model: 'openai:gpt-inbound' },
      { id: 'steerer', name: 'Steerer', model: 'openai:gpt-steer' },
    ],
    channels: { webhook: { secret: HOOK_SECRET, dmPolicy: 'open', agentId: 'inbound' } },
  };
  fs.writeFileSync(path.join(dir, 'crosstalk.config.json'), JSON.stringify(config, null, 2));
}

// ---- the fake model: arrival times recorded where the request arrives (its handler), per run of this bench ----
const arrivals = new Map<string, (t: number) => void>();
const steerMarks = new Map<string, { step2End?: number; childRunId?: string; arrival3?: (t: number) => void }>();
const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? (content as Array<{ text?: string }>).map((p) => p.text ?? '').join('') : '';

async function startModel() {
  const fake = await startFakeOpenAI();
  fake.setHandler(async (body) => {
    const at = nowMs();
    const msgs = body.messages;
    const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
    const userText = textOf(lastUser?.content);
    if (body.model === 'gpt-inbound') {
      const id = /inbound (\S+)/.exec(userText)?.[1];
      if (id) arrivals.get(id)?.(at);
      return { text: `echo: ${userText}`, usage: { promptTokens: 50, completionTokens: 5 } };
    }
    if (body.model === 'gpt-steer') {
      const all = msgs.map((m) => textOf(m.content)).join('\n');
      const id = /steer (\S+)/.exec(all)?.[1] ?? '?';
      const mark = steerMarks.get(id);
      // Step 3: the child's callback is in the prompt.
      if (all.includes(`child ${id} done`)) {
        mark?.arrival3?.(at);
        return { text: 'got the callback' };
      }
      const last = msgs.at(-1);
      if (last?.role === 'tool') {
        // Step 2: the model's own time (the child ends during it), then a plain answer.
        const m = /"run_id"\s*:\s*"([^"]+)"/.exec(textOf(last.content)) ?? /run_id[^A-Za-z0-9_]+([A-Za-z0-9_-]+)/.exec(textOf(last.content));
        if (mark && m) mark.childRunId = m[1];
        await sleep(300);
        if (mark) mark.step2End = nowMs();
        return { text: 'still working' };
      }
      // Step 1: delegate to the researcher, detached (its callback comes back to this session).
      return { toolCalls: [{ name: 'delegate_agent', args: { agent_id: 'researcher', prompt: `/sleep 40\n/reply child ${id} done`, mode: 'detached' } }] };
    }
    return { text: `echo: ${userText}` };
  });
  return fake;
}

async function start(dataDir: string, cwd: string, env: Record<string, string>): Promise<ServerHandle> {
  const h = await startServer({ dataDir, token: TOKEN, cwd, env: { CROSSTALK_LOG_LEVEL: 'warn', ...env }, readyTimeoutMs: 120_000 });
  live.add(h);
  return h;
}
async function stop(h: ServerHandle) {
  await h.stop();
  live.delete(h);
}

type Target = { name: string; rpc: RpcClient };

/** Sequential turns, one target after the other in a rotating order, so every target sees the same load. */
async function interleavedTurns(targets: Target[], turns: number, warmup: number) {
  const times = new Map<string, number[]>(targets.map((t) => [t.name, []]));
  const errors = new Map<string, number>(targets.map((t) => [t.name, 0]));
  for (let i = 0; i < warmup + turns; i++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(i + k) % targets.length]!;
      const t0 = performance.now();
      const r = await turn(t.rpc, 'agent:main:bench-turns', `ping ${i}`);
      const dt = performance.now() - t0;
      if (r.status !== 'ok' || r.response !== `echo: ping ${i}`) errors.set(t.name, errors.get(t.name)! + 1);
      if (i >= warmup) times.get(t.name)!.push(dt);
    }
  }
  return Object.fromEntries(targets.map((t) => [t.name, { ...summarize(times.get(t.name)!), errors: errors.get(t.name)! }]));
}

/** 50 sessions at once, one turn each (new sessions every round), the targets taking turns round by round. */
async function interleavedConcurrent(targets: Target[], rounds: number, n = 50) {
  const walls = new Map<string, number[]>(targets.map((t) => [t.name, []]));
  const failed = new Map<string, number>(targets.map((t) => [t.name, 0]));
  for (let r = 0; r < rounds + 1; r++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(r + k) % targets.length]!;
      const t0 = performance.now();
      const res = await Promise.all(Array.from({ length: n }, (_, i) => turn(t.rpc, `agent:main:bench-conc-${r}-${i}`, `hello ${i}`).catch(() => null)));
      const wall = performance.now() - t0;
      failed.set(t.name, failed.get(t.name)! + res.filter((x) => x?.status !== 'ok').length);
      if (r > 0) walls.get(t.name)!.push(wall); // round 0 warms the path
    }
  }
  return Object.fromEntries(targets.map((t) => [t.name, { ...summarize(walls.get(t.name)!), failed: failed.get(t.name)! }]));
}

/** Inbound webhook channel POST → the moment the fake model's handler sees that message's provider request. */
async function inboundLatency(server: ServerHandle, samples: number) {
  const lat: number[] = [];
  let failed = 0;
  for (let i = 0; i < samples + 10; i++) {
    const id = `${i}-${crypto.randomBytes(3).toString('hex')}`;
    const body = JSON.stringify({ from: `bench-peer-${i % 20}`, text: `inbound ${id}`, messageId: `m-${id}` });
    const seen = new Promise<number>((resolve) => arrivals.set(id, resolve));
    const t0 = nowMs();
    const res = await fetch(`${server.baseUrl}/api/channels/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', ...signWebhook(HOOK_SECRET, body) }, body });
    await res.arrayBuffer();
    const at = await Promise.race([seen, sleep(10_000).then(() => NaN)]);
    arrivals.delete(id);
    if (!res.ok || !Number.isFinite(at)) failed++;
    else if (i >= 10) lat.push(at - t0);
    await sleep(15); // let the run finish before the peer writes again
  }
  return { ...summarize(lat), failed };
}

/** Steer: the parent is in a model step when its detached child ends; the callback must reach the parent's next model request. */
async function steerLatency(server: ServerHandle, rpc: RpcClient, samples: number): Promise<SteerLatency> {
  const total: number[] = [];
  const beyond: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  for (let i = 0; i < samples + 2; i++) {
    const id = `s${i}x${crypto.randomBytes(2).toString('hex')}`;
    const arrival3 = new Promise<number>((resolve) => steerMarks.set(id, { arrival3: resolve }));
    const sessionKey = `agent:steerer:bench-steer-${id}`;
    await rpc.call('agent', { sessionKey, message: `steer ${id}` });
    const at3 = await Promise.race([arrival3, sleep(15_000).then(() => NaN)]);
    const mark = steerMarks.get(id)!;
    steerMarks.delete(id);
    if (!Number.isFinite(at3) || !mark.childRunId || mark.step2End === undefined) {
      failed++;
      firstFailure ??= `sample ${id}: callback request ${Number.isFinite(at3) ? 'seen' : 'not seen'}, child ${mark.childRunId ?? 'unknown'}`;
      continue;
    }
    const endTs = await replayUntil<string>(`${server.baseUrl}/api/gateway/events?runId=${encodeURIComponent(mark.childRunId)}`, TOKEN, (e) => {
      const ev = e as { stream: string; ts: string; data?: { phase?: string } };
      return ev.stream === 'lifecycle' && (ev.data?.phase === 'end' || ev.data?.phase === 'error') ? ev.ts : undefined;
    }, 10_000);
    if (!endTs) {
      failed++;
      firstFailure ??= `sample ${id}: child end not found`;
      continue;
    }
    const childEnd = Date.parse(endTs);
    if (i >= 2) {
      total.push(at3 - childEnd);
      beyond.push(at3 - Math.max(childEnd, mark.step2End));
    }
    await sleep(30);
  }
  return { total: summarize(total), beyond: summarize(beyond), failed, firstFailure };
}

async function main() {
  const results: TurnsResults = { date: new Date().toISOString(), load: { begin: loadAvg(), during: [] }, settings: S, errors: {} };
  const attempt = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      results.errors[name] = (e as Error).message ?? String(e);
      console.error(`[bench:turns] ${name} failed: ${(e as Error).stack ?? e}`);
    }
    results.load.during.push(`${name}: ${loadAvg()}`);
  };
  const model = await startModel();
  const env = { OPENAI_BASE_URL: model.baseURL, OPENAI_API_KEY: 'sk-bench' };
  const cwd = makeTempDir('ct-turns-cwd-');
  writeConfig(cwd);
  const dataDir = makeTempDir('ct-turns-data-');
  const pgDir = makeTempDir('ct-turns-pg-');
  const schema = `bench_${crypto.randomBytes(4).toString('hex')}`;
  const bare = await startBareServer(TOKEN);
  let sqlite: ServerHandle | undefined;
  let pg: ServerHandle | undefined;
  try {
    log(`load ${results.load.begin}; starting the servers`);
    sqlite = await start(dataDir, cwd, env);
    await afterWarm(sqlite); // idle RSS once the start's warm-up is over (no page asked for yet)
    results.idleRssKb = [sqlite.rss().totalKb];
    await attempt('postgres server', async () => {
      pg = await start(pgDir, cwd, { ...env, DATABASE_URL: PG, CROSSTALK_PG_SCHEMA: schema });
    });
    const targets: Target[] = [
      { name: 'floor', rpc: new RpcClient({ baseUrl: bare.baseUrl, token: TOKEN }) },
      { name: 'sqlite', rpc: new RpcClient({ baseUrl: sqlite.baseUrl, token: TOKEN }) },
      ...(pg ? [{ name: 'pg', rpc: new RpcClient({ baseUrl: pg.baseUrl, token: TOKEN }) }] : []),
    ];
    await attempt('turns', async () => {
      log(`turns: ${S.warmup} + ${S.turns} on each of ${targets.map((t) => t.name).join(', ')}, interleaved`);
      const r = await interleavedTurns(targets, S.turns, S.warmup);
      results.floorTurns = r.floor;
      results.sqliteTurns = r.sqlite;
      results.pgTurns = r.pg;
    });
    await attempt('concurrent', async () => {
      log(`50 concurrent sessions: ${S.concRounds} rounds, interleaved`);
      const r = await interleavedConcurrent(targets, S.concRounds);
      results.floorConc = r.floor;
      results.sqliteConc = r.sqlite;
      results.pgConc = r.pg;
    });
    await attempt('inbound', async () => {
      log(`inbound webhook → provider request: ${S.inbound} samples`);
      results.inbound = await inboundLatency(sqlite!, S.inbound);
    });
    await attempt('steer', async () => {
      log(`steer callback: ${S.steer} samples`);
      results.steer = await steerLatency(sqlite!, targets[1]!.rpc, S.steer);
    });
    for (const t of targets) t.rpc.close();
    await sleep(1000);
    const after = sqlite.rss();
    results.afterLoadRssKb = after.totalKb;
    results.afterLoadProcesses = after.processes.map((p) => `${p.name} = ${(p.rssKb / 1024).toFixed(0)} MB`).join(', ');
    // Again once the server has been idle a while: V8's memory reducer returns a burst's garbage ~8 s after
    // allocation stops, so the two readings tell garbage from memory the server keeps (the goal is read at 1 s).
    await sleep(9000);
    results.afterLoadSettledRssKb = sqlite.rss().totalKb;
    await stop(sqlite);
    sqlite = undefined;
    if (pg) await stop(pg);
    pg = undefined;
    await attempt('starts', async () => {
      results.starts = [];
      for (let i = 0; i < S.starts; i++) {
        const h = await start(dataDir, cwd, env);
        await afterWarm(h);
        results.starts.push(h.readyMs);
        results.idleRssKb!.push(h.rss().totalKb);
        // One page: the pages' worker starts (scripts/pages.mjs) and stays until it has been idle for 5 minutes.
        await (await fetch(`${h.baseUrl}/`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
        await sleep(1500);
        (results.pagesRssKb ??= []).push(h.rss().totalKb);
        // Idle again: V8's memory reducer gives back the page's garbage in both heaps some seconds after the last request.
        await sleep(8500);
        (results.pagesSettledRssKb ??= []).push(h.rss().totalKb);
        log(`start ${i + 1}: ready in ${h.readyMs.toFixed(0)} ms, idle ${(h.rss().totalKb / 1024).toFixed(0)} MB`);
        await stop(h);
      }
    });
    await attempt('statements', async () => {
      log('statements and round trips per turn (in-process runtimes, counted at the client)');
      results.statements = await pgStatementsPerTurn(PG, S.pgTurns);
    });
    await attempt('capacity', async () => {
      log(`capacity: 1, 2, 4 gateway processes on one PostgreSQL, ${S.capSeconds} s each`);
      results.capacity = await pgCapacity({ pgUrl: PG, token: TOKEN, cwd, env, seconds: S.capSeconds, track: (h) => (live.add(h), () => live.delete(h)) });
    });
  } finally {
    bare.stop();
    for (const h of [sqlite, pg]) if (h) await stop(h).catch(() => {});
    await dropStoreSchemas(PG, schema);
    await model.close();
    for (const d of [cwd, dataDir, pgDir]) fs.rmSync(d, { recursive: true, force: true });
    fs.rmSync(`${dataDir}-ws`, { recursive: true, force: true });
    fs.rmSync(`${pgDir}-ws`, { recursive: true, force: true });
  }
  results.load.end = loadAvg();
  const out = path.join(repoRoot, '.bench');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, quick ? 'turns.quick.json' : 'turns.json'), JSON.stringify(results, null, 2) + '\n');
  const md = renderTurns(results, { clkTck: CLK_TCK });
  console.log(md);
  if (!process.argv.includes('--no-md') && !quick) {
    const file = path.join(repoRoot, 'BENCHMARKS.md');
    writeMarked(file, 'turns', md);
    fs.writeFileSync(file, putSummaryRows(fs.readFileSync(file, 'utf8'), summaryRows(results)));
  }
  if (Object.keys(results.errors).length) log(`failed: ${Object.keys(results.errors).join(', ')}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`[bench:turns] failed: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
