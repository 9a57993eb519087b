// `npx tsx bench/wal-pages.ts [turns]`: which b-trees a SQLite turn writes — an in-process runtime (unbundled sources),
// its WAL frames per turn (the WAL index header's mxFrame before and after each turn) mapped to tables and indexes
// through dbstat; for turns on one session and on new sessions, medians over `turns` turns; then rounds of 50 new
// sessions at once, whose writes share commits (group commit): frames and commits per turn. Figures, not assertions.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { serve } from '../server/http/node-server';
import { createLogger } from '../server/logger';
import { RpcClient, turn } from './lib/http';
import { sleep } from './lib/stats';

const N = Number(process.argv[2] ?? 15);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-walpages-'));
const rt = await createRuntime({ config: resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: dir, CROSSTALK_WORKSPACES: `${dir}-ws` }), log: createLogger('warn') });
const served = await serve(rt);
const rpc = new RpcClient({ baseUrl: served.url, token: rt.token });
const file = path.join(dir, fs.readdirSync(dir).find((f) => /\.(db|sqlite)$/.test(f) && !f.includes('lock'))!);
const side = new Database(file, { readonly: true });
const shm = fs.openSync(`${file}-shm`, 'r');
/** The WAL's valid frames (WalIndexHdr.mxFrame, offset 16 of the -shm file, native byte order). */
const mxFrame = () => {
  const b = Buffer.alloc(4);
  fs.readSync(shm, b, 0, 4, 16);
  return os.endianness() === 'LE' ? b.readUInt32LE(0) : b.readUInt32BE(0);
};
for (let i = 0; i < 30; i++) await turn(rpc, 'agent:main:same', `warm ${i}`);
for (let i = 0; i < 30; i++) await turn(rpc, `agent:main:warm-${i}`, `warm ${i}`);

/** One turn's frames by b-tree (retried when a checkpoint restarted the WAL meanwhile). */
async function oneTurn(key: string): Promise<Map<string, number>> {
  for (;;) {
    await sleep(250); // past the search indexer's tick
    const a = mxFrame();
    await turn(rpc, key, 'hello there');
    const b = mxFrame();
    if (b <= a) continue;
    const wal = fs.readFileSync(`${file}-wal`);
    const size = wal.readUInt32BE(8);
    const names = new Map<number, string>();
    for (const r of side.prepare('select name, pageno from dbstat').iterate() as Iterable<{ name: string; pageno: number }>) names.set(r.pageno, r.name);
    const out = new Map<string, number>();
    for (let f = a; f < b; f++) {
      const page = wal.readUInt32BE(32 + f * (24 + size));
      const name = names.get(page) ?? '(new page)';
      out.set(name, (out.get(name) ?? 0) + 1);
    }
    return out;
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
async function measure(label: string, key: (i: number) => string): Promise<void> {
  const turns: Array<Map<string, number>> = [];
  for (let i = 0; i < N; i++) turns.push(await oneTurn(key(i)));
  const names = new Set(turns.flatMap((t) => [...t.keys()]));
  const per = [...names].map((n) => [n, median(turns.map((t) => t.get(n) ?? 0))] as const).filter(([, m]) => m > 0).sort((x, y) => y[1] - x[1]);
  const totals = turns.map((t) => [...t.values()].reduce((s, v) => s + v, 0));
  console.log(`${label}: ${median(totals)} frames per turn (median of ${N}; ${Math.min(...totals)}–${Math.max(...totals)})`);
  console.log(`  ${per.map(([n, m]) => `${n} ${m}`).join(', ')}`);
}
await measure('a turn on one session', () => 'agent:main:same');
await measure('a new session\'s turn', (i) => `agent:main:new-${i}`);

/** Rounds of 50 new sessions at once: WAL frames and commits (frames marking one) per turn, over all rounds. */
async function concurrent(rounds: number): Promise<void> {
  let frames = 0;
  let commits = 0;
  for (let r = 0; r < rounds; ) {
    await sleep(250);
    const a = mxFrame();
    await Promise.all(Array.from({ length: 50 }, (_, i) => turn(rpc, `agent:main:conc-${r}-${i}`, 'hello there')));
    const b = mxFrame();
    if (b <= a) continue; // a checkpoint restarted the WAL meanwhile: again
    const wal = fs.readFileSync(`${file}-wal`);
    const size = wal.readUInt32BE(8);
    for (let f = a; f < b; f++) if (wal.readUInt32BE(32 + f * (24 + size) + 4) !== 0) commits++;
    frames += b - a;
    r++;
  }
  console.log(`50 new sessions at once: ${(frames / (rounds * 50)).toFixed(1)} frames and ${(commits / (rounds * 50)).toFixed(2)} commits per turn (${rounds} rounds)`);
}
await concurrent(Math.max(2, Math.round(N / 3)));
rpc.close();
await served.close();
await rt.close();
side.close();
fs.rmSync(dir, { recursive: true, force: true });
fs.rmSync(`${dir}-ws`, { recursive: true, force: true });
process.exit(0);
