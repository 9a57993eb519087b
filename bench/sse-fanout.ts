// `npx tsx bench/sse-fanout.ts [--subs N] [--words W] [--turns T]`: a long reply streamed to many readers of one
// session's event stream (`GET /api/gateway/events`), and what it does to the rest of the gateway — an in-process
// runtime (SQLite) in this thread; N SSE readers and a `status` poller (every 100 ms) in a child process. Prints the
// turns' wall time, the server thread's CPU, the events each reader got (all of them: checked) and the slowest
// `status` answer while the turns ran. Figures, not assertions.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? d : Number(process.argv[i + 1]);
};

/** The readers and the poller (CommonJS for `node -e`): "ready" once every stream is open, then one JSON line at "stop". */
const CLIENT = `
const http = require('node:http');
const [url, token, key, subs] = [process.env.U, process.env.T, process.env.K, Number(process.env.N)];
const agent = new http.Agent({ keepAlive: true, maxSockets: subs + 4 });
const counts = new Array(subs).fill(0);
let open = 0;
for (let i = 0; i < subs; i++) {
  http.get(url + '/api/gateway/events?sessionKey=' + key, { agent, headers: { authorization: 'Bearer ' + token } }, (res) => {
    if (++open === subs) console.log('ready');
    let tail = '';
    res.setEncoding('utf8');
    res.on('data', (c) => {
      const s = tail + c;
      const parts = s.split('\\n\\n');
      tail = parts.pop();
      for (const p of parts) if (p.includes('data: ')) counts[i]++;
    });
  });
}
let worst = 0, polls = 0, polling = false;
const poll = setInterval(() => {
  if (polling) return;
  polling = true;
  const t0 = performance.now();
  const req = http.request(url + '/api/gateway', { method: 'POST', agent, headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' } }, (res) => {
    res.resume();
    res.on('end', () => { worst = Math.max(worst, performance.now() - t0); polls++; polling = false; });
  });
  req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'status' }));
}, 100);
process.stdin.on('data', () => {
  clearInterval(poll);
  console.log(JSON.stringify({ counts, worst, polls }));
  process.exit(0);
});
`;

async function main(): Promise<void> {
  const subs = arg('subs', 20);
  const words = arg('words', 40_000);
  const turns = arg('turns', 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-ssefan-'));
  const rt = await createRuntime({ config: resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: dir, CROSSTALK_WORKSPACES: `${dir}-ws` }), log: createLogger('warn') });
  const served = await serve(rt);
  const key = 'agent:main:fanout';
  const child = spawn(process.execPath, ['-e', CLIENT], { env: { ...process.env, U: served.url, T: rt.token, K: key, N: String(subs) }, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let onLine: (() => void) | undefined;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    lines.push(...d.split('\n').filter(Boolean));
    onLine?.();
  });
  const line = () => new Promise<string>((r) => { const take = () => { if (lines.length) { onLine = undefined; r(lines.shift()!); } }; onLine = take; take(); });
  try {
    if ((await line()) !== 'ready') throw new Error('readers did not start');
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${served.url}/api/gateway`, { method: 'POST', headers: { authorization: `Bearer ${rt.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
      return ((await res.json()) as { result: any }).result;
    };
    const message = Array.from({ length: words }, (_, i) => `w${i % 100}`).join(" ");
    const rss0 = process.memoryUsage().rss;
    const c0 = process.threadCpuUsage();
    const t0 = performance.now();
    const runs: string[] = [];
    for (let i = 0; i < turns; i++) runs.push((await rpc('agent', { sessionKey: key, message, queueMode: 'followup' })).runId);
    for (const runId of runs) await rpc('agent.wait', { runId, timeoutMs: 600_000 });
    const wall = performance.now() - t0;
    const c1 = process.threadCpuUsage(c0);
    // Every event of the turns reaches every reader: wait until the counts stop moving.
    const events = Number((await rt.store.db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).where('session_key', '=', key).executeTakeFirst())?.n ?? 0);
    await new Promise((r) => setTimeout(r, 1500));
    child.stdin!.write('stop\n');
    const out = JSON.parse(await line()) as { counts: number[]; worst: number; polls: number };
    const rss1 = process.memoryUsage().rss;
    console.log(`${subs} readers, ${turns} turns of ${words} words: wall ${(wall / 1000).toFixed(2)} s, server thread CPU ${((c1.user + c1.system) / 1e6).toFixed(2)} s; events logged ${events} (rows, folded runs count less), each reader got ${Math.min(...out.counts)}–${Math.max(...out.counts)}`);
    console.log(`slowest status answer while they ran: ${out.worst.toFixed(1)} ms (${out.polls} polls); RSS ${(rss0 / 1048576).toFixed(0)} → ${(rss1 / 1048576).toFixed(0)} MB`);
  } finally {
    child.kill();
    await served.close();
    await rt.close();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${dir}-ws`, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error((e as Error).stack ?? e);
    process.exit(1);
  },
);
