// `npm run bench [-- --quick | --baseline <results.json>]`: the four benches in order — run.ts, cluster.ts, jobs.ts,
// turns.ts — each given the same flags (npm hands a script's extra arguments to its last command only, so a chain
// of `&&` in package.json ran the first three in full); stops at the first that fails, with its exit code.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const tsx = path.join(here, '..', 'node_modules', '.bin', 'tsx');
for (const step of ['run.ts', 'cluster.ts', 'jobs.ts', 'turns.ts']) {
  const r = spawnSync(tsx, [path.join(here, step), ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
