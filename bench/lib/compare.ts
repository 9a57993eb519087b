// This checkout against another (e.g. the last Node 20 commit) in one run, interleaved so both see the same machine load: start to ready, idle and loaded RSS, turn latency.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { RpcClient, turn } from './http';
import { concurrentSessions } from './scenarios';
import { makeTempDir, type ServerHandle, startServer } from './server';
import { median, sleep, summarize, type Summary } from './stats';

export interface Side {
  label: string;
  /** Checkout root and node binary; undefined = this checkout on this process's node. */
  root?: string;
  nodePath?: string;
}

export interface SideFigures {
  label: string;
  node: string;
  commit: string;
  readyMs: number[];
  idleRssKb: number[];
  turns: Summary;
  afterLoadRssKb: number;
  /** Wall time and failures of the 1,000 concurrent sessions. */
  concurrent: { wallMs: number; failed: number; firstFailure?: string };
}

export interface CompareResult {
  repeats: number;
  turns: number;
  sides: [SideFigures, SideFigures];
}

function commitOf(root: string): string {
  try {
    const head = fs.readFileSync(path.join(root, '.git'), 'utf8').trim();
    // A worktree's .git is a file pointing at its gitdir; HEAD there is a commit (detached) or a ref.
    const gitdir = head.startsWith('gitdir:') ? head.slice(7).trim() : path.join(root, '.git');
    const ref = fs.readFileSync(path.join(gitdir, 'HEAD'), 'utf8').trim();
    if (!ref.startsWith('ref:')) return ref.slice(0, 7);
    const name = ref.slice(4).trim();
    const common = fs.existsSync(path.join(gitdir, 'commondir')) ? path.resolve(gitdir, fs.readFileSync(path.join(gitdir, 'commondir'), 'utf8').trim()) : gitdir;
    for (const dir of [gitdir, common]) {
      const f = path.join(dir, name);
      if (fs.existsSync(f)) return fs.readFileSync(f, 'utf8').trim().slice(0, 7);
    }
    const packed = fs.readFileSync(path.join(common, 'packed-refs'), 'utf8').split('\n').find((l) => l.endsWith(` ${name}`));
    return packed?.slice(0, 7) ?? '?';
  } catch {
    return '?';
  }
}

/**
 * Both sides, interleaved: `repeats` starts each on an existing store (A, B, A, B…); then both servers up
 * at once, `turns` sequential turns alternating between them; then 1,000 concurrent sessions on each and
 * the RSS after. Bounded by the counts; every server is stopped.
 */
export async function compareSides(a: Side, b: Side, o: { token: string; repeats: number; turns: number; root: string; env: Record<string, string>; track(h: ServerHandle): () => void }): Promise<CompareResult> {
  const sides = [a, b].map((s) => ({
    side: s,
    dataDir: makeTempDir('crosstalk-cmp-data-'),
    cwd: makeTempDir('crosstalk-cmp-cwd-'),
    readyMs: [] as number[],
    idleRssKb: [] as number[],
    node: '',
  }));
  const start = async (i: number) => {
    const s = sides[i]!;
    const h = await startServer({ dataDir: s.dataDir, cwd: s.cwd, token: o.token, env: o.env, root: s.side.root, nodePath: s.side.nodePath });
    return { h, untrack: o.track(h) };
  };
  try {
    // A first start creates each store (migrations); not counted.
    for (let i = 0; i < 2; i++) {
      sides[i]!.node = spawnSync(sides[i]!.side.nodePath ?? process.execPath, ['--version'], { encoding: 'utf8' }).stdout.trim();
      const { h, untrack } = await start(i);
      await h.stop();
      untrack();
    }
    for (let r = 0; r < o.repeats; r++) {
      for (let i = 0; i < 2; i++) {
        const { h, untrack } = await start(i);
        await sleep(1000);
        sides[i]!.readyMs.push(h.readyMs);
        sides[i]!.idleRssKb.push(h.rss().totalKb);
        await h.stop();
        untrack();
      }
    }
    // Both up at once; turns alternate A, B so load spikes hit both alike.
    const up = [await start(0), await start(1)];
    const rpcs = up.map(({ h }) => new RpcClient({ baseUrl: h.baseUrl, token: o.token }));
    const samples: number[][] = [[], []];
    try {
      for (let i = 0; i < 20; i++) for (const rpc of rpcs) await turn(rpc, 'agent:main:cmp', `warm-up ${i}`);
      for (let i = 0; i < o.turns; i++) {
        for (let k = 0; k < 2; k++) {
          const t0 = performance.now();
          await turn(rpcs[k]!, 'agent:main:cmp', `ping ${i}`);
          samples[k]!.push(performance.now() - t0);
        }
      }
      const concurrent: SideFigures['concurrent'][] = [];
      for (let k = 0; k < 2; k++) {
        await concurrentSessions(rpcs[k]!, 50, 0);
        const c = await concurrentSessions(rpcs[k]!, 1000, 50);
        concurrent.push({ wallMs: c.wallMs, failed: c.failed, ...(c.firstFailure ? { firstFailure: c.firstFailure } : {}) });
      }
      await sleep(1000);
      const after = up.map(({ h }) => h.rss().totalKb);
      const figures = sides.map(
        (s, k): SideFigures => ({
          label: s.side.label,
          node: s.node,
          commit: commitOf(s.side.root ?? o.root),
          readyMs: s.readyMs,
          idleRssKb: s.idleRssKb,
          turns: summarize(samples[k]!),
          afterLoadRssKb: after[k]!,
          concurrent: concurrent[k]!,
        }),
      ) as [SideFigures, SideFigures];
      return { repeats: o.repeats, turns: o.turns, sides: figures };
    } finally {
      for (const rpc of rpcs) rpc.close();
      for (const { h, untrack } of up) {
        await h.stop();
        untrack();
      }
    }
  } finally {
    for (const s of sides) {
      fs.rmSync(s.dataDir, { recursive: true, force: true });
      fs.rmSync(s.cwd, { recursive: true, force: true });
    }
  }
}

/** The comparison as markdown rows: metric, side A, side B, change of B against A (✱ = held to ≤ +10%). */
export function compareRows(c: CompareResult): { headers: string[]; rows: string[][] } {
  const [a, b] = c.sides;
  const pct = (x: number, y: number) => (x > 0 ? `${y >= x ? '+' : ''}${(((y - x) / x) * 100).toFixed(0)}%` : '');
  const msf = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : v >= 10 ? `${v.toFixed(1)} ms` : `${v.toFixed(2)} ms`);
  const mbf = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
  const failed = (x: SideFigures) => (x.concurrent.failed ? ` (${x.concurrent.failed} failed: ${x.concurrent.firstFailure ?? '?'})` : ' (0 failed)');
  const row = (label: string, x: number, y: number, f: (v: number) => string) => [label, f(x), f(y), pct(x, y)];
  return {
    headers: ['metric', `${a.label} (${a.node || '?'}, ${a.commit})`, `${b.label} (${b.node || '?'}, ${b.commit})`, 'change'],
    rows: [
      row(`start to ready, median of ${c.repeats} ✱`, median(a.readyMs), median(b.readyMs), msf),
      row(`idle RSS, median of ${c.repeats} ✱`, median(a.idleRssKb), median(b.idleRssKb), mbf),
      row(`turn round trip p50 (${c.turns} alternating turns) ✱`, a.turns.p50, b.turns.p50, msf),
      row('turn round trip p95', a.turns.p95, b.turns.p95, msf),
      row('RSS after turns + 1,000 concurrent sessions ✱', a.afterLoadRssKb, b.afterLoadRssKb, mbf),
      ...(a.concurrent && b.concurrent
        ? [['1,000 concurrent sessions, wall (failures)', msf(a.concurrent.wallMs) + failed(a), msf(b.concurrent.wallMs) + failed(b), pct(a.concurrent.wallMs, b.concurrent.wallMs)]]
        : []),
    ],
  };
}
