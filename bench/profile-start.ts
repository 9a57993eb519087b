// `npx tsx bench/profile-start.ts [--keep]`: what start to ready costs — a CPU profile of `npm start`'s path (--cpu-prof) up to the first authorized request, time by package and file.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Profile, selfTimes } from './lib/cpu-profile';
import { makeTempDir, startServer } from './lib/server';
import { ms } from './lib/stats';

/** The package (or our own top directory) a script URL belongs to. */
function owner(url: string): string {
  if (!url) return '(native / V8)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node: builtins';
  const m = /\.next\/server\/(chunks\/)?([^/]+)$/.exec(url);
  if (m) return `.next/server ${m[2]}`;
  return url.replace(/^file:\/\//, '').split('/').slice(-2).join('/');
}

async function main(): Promise<void> {
  const dataDir = makeTempDir('ct-profstart-data-');
  const cwd = makeTempDir('ct-profstart-cwd-');
  const profDir = makeTempDir('ct-profstart-');
  const token = crypto.randomBytes(18).toString('base64url');
  // A first start creates the store; the profiled one starts on it (as every start but the first does).
  await (await startServer({ dataDir, token, cwd })).stop();
  const server = await startServer({ dataDir, token, cwd, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=200'] });
  console.log(`ready in ${ms(server.readyMs)}; RSS ${(server.rss().totalKb / 1024).toFixed(0)} MB`);
  await server.stop();
  const files = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  for (const f of files) {
    const prof = JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')) as Profile;
    const { byId, self, total } = selfTimes(prof);
    const byOwner = new Map<string, number>();
    const byUrl = new Map<string, number>();
    for (const [id, us] of self) {
      const n = byId.get(id)!;
      byOwner.set(owner(n.callFrame.url), (byOwner.get(owner(n.callFrame.url)) ?? 0) + us);
      byUrl.set(n.callFrame.url || n.callFrame.functionName, (byUrl.get(n.callFrame.url || n.callFrame.functionName) ?? 0) + us);
    }
    console.log(`\n${f}: ${(total / 1000).toFixed(0)} ms of samples (the whole process life, up to the stop)`);
    console.log('self time by package:');
    for (const [k, v] of [...byOwner].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${(v / 1000).toFixed(1).padStart(8)} ms  ${k}`);
    // Each sample goes to the nearest frame on its stack that is a package's or our own code (not node's loader):
    // the package whose loading or running the time was spent on (a require's loader work counts for the requirer).
    const parent = new Map<number, number>();
    for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const attributed = new Map<string, number>();
    for (const [id, us] of self) {
      let cur: number | undefined = id;
      let who = '(node / V8 only)';
      while (cur !== undefined) {
        const url = byId.get(cur)!.callFrame.url;
        // Loaders are not owners: node's, Next's require hook, Turbopack's chunk runtime.
        if (url && !url.startsWith('node:') && !/require-hook\.js$|_runtime\.js$/.test(url)) {
          who = owner(url);
          break;
        }
        cur = parent.get(cur);
      }
      attributed.set(who, (attributed.get(who) ?? 0) + us);
    }
    console.log('time by the package on the stack (loader work counted for the package that required):');
    for (const [k, v] of [...attributed].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${(v / 1000).toFixed(1).padStart(8)} ms  ${k}`);
    console.log('self time by script:');
    for (const [k, v] of [...byUrl].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${(v / 1000).toFixed(1).padStart(8)} ms  ${k.replace(/^file:\/\//, '')}`);
  }
  if (process.argv.includes('--keep')) console.log(`profiles kept in ${profDir}`);
  else fs.rmSync(profDir, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(cwd, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
