// `npx tsx bench/profile-reads.ts DIR [--cpu-prof]` (DATABASE_URL= for PostgreSQL, N= calls, ONLY= one read, KEY= a
// session that has a row): the room's own reads on a quiet server over a bench:scale store — the page's server render
// (`/?session=agent:main:live-0`, no row until a stream has run there, and KEY's), then each tRPC query the room asks
// for — wall time per call and the server's CPU per call (/proc, the launcher and its child).
import path from 'node:path';
import { CLK_TCK, cpuTicks, processTree } from './lib/proc';
import { repoRoot, startServer } from './lib/server';

const dir = path.resolve(process.argv.slice(2).find((a) => !a.startsWith('--'))!);
const N = Number(process.env.N ?? 15);
const ONLY = process.env.ONLY;
const prof = process.argv.includes('--cpu-prof');
const server = await startServer({
  dataDir: path.join(dir, 'data'),
  token: 'tk',
  cwd: repoRoot,
  readyTimeoutMs: 300_000,
  nodeArgs: prof ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, 'prof-reads')}`] : [],
  env: process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {},
});
/** CPU ms of the server and its children so far (the launcher re-executes itself). */
const cpuMs = () => cpuTicks(processTree(server.pid)) * (1000 / CLK_TCK);
const q = (proc: string, input?: unknown) => `/api/trpc/${proc}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`;
const live = 'agent:main:live-0';
const reads: Record<string, string> = {
  'page (live-0)': `/?session=${live}`,
  'page (KEY)': `/?session=${encodeURIComponent(process.env.KEY ?? 'agent:main:main')}`,
  'sessions.list': q('sessions.list', { limit: 100 }),
  'chat.history': q('chat.history', { sessionKey: live, limit: 50, includeTools: true }),
  'status.get': q('status.get'),
  'status.board': q('status.board', {}),
  'approvals.list (inbox)': q('approvals.list', {}),
  'approvals.list (session)': q('approvals.list', { sessionKey: live }),
  'sessions.usage': q('sessions.usage', { sessionKey: live }),
  'agents.list': q('agents.list', {}),
  'pairings.list': q('pairings.list', {}),
};
const headers = { authorization: 'Bearer tk' };
try {
  for (let i = 0; i < 3; i++) await (await fetch(server.baseUrl + reads['page (KEY)'], { headers })).text();
  for (const [name, url] of Object.entries(reads)) {
    if (ONLY && name !== ONLY) continue;
    const ts: number[] = [];
    let status = 0;
    const c0 = cpuMs();
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      const r = await fetch(server.baseUrl + url, { headers });
      await r.text();
      ts.push(performance.now() - t0);
      status = r.status;
    }
    const cpu = (cpuMs() - c0) / N;
    ts.sort((a, b) => a - b);
    console.log(`${name}: median ${ts[N >> 1]!.toFixed(1)} ms, min ${ts[0]!.toFixed(1)} ms, server CPU ${cpu.toFixed(1)} ms a call (HTTP ${status})`);
  }
} finally {
  await server.stop();
}
