// `npm start` keeps Node's compile cache beside the build (.next/cache/node-compile-cache): the first start writes
// it after its warm-up, so a start after one killed hard still finds it, and loads the gateway's modules from it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, TOKEN } from './fixtures';
import { freePort } from './support/server-process';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = path.join(ROOT, '.next', 'cache', 'node-compile-cache');

/** Starts `node scripts/start.mjs` with Node's compile cache tracing on, until its output matches `until`, `thenMs` more; then SIGKILL (nothing written at exit). All it printed. */
async function startUntil(dataDir: string, until: RegExp, thenMs = 0): Promise<string> {
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(await freePort()), HOST: '127.0.0.1', CROSSTALK_TOKEN: TOKEN, CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws`, NODE_DEBUG_NATIVE: 'COMPILE_CACHE', CROSSTALK_WARM_ROOM_MS: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  try {
    await expect.poll(() => until.test(out), { timeout: 60_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, thenMs));
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  return out;
}

test("a start after the first loads the gateway's modules from Node's compile cache, written after the warm-up", async () => {
  test.setTimeout(120_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-e2e-cache-'));
  try {
    fs.rmSync(CACHE, { recursive: true, force: true });
    // The first start compiles and writes the cache once the room's API is warmed (right after that line), then dies
    // unannounced. (Another worker's room server may write the same modules' entries meanwhile, as it warms up too.)
    const first = await startUntil(dataDir, /room's API warmed/, 1_000);
    expect(first).toMatch(/\[compile cache\] (writing cache for|V8 code cache for) /);
    // The next start reads the build's modules from it.
    const second = await startUntil(dataDir, /crosstalk: listening on/);
    expect(second).toMatch(/V8 code cache for CommonJS \S*\.next\/server\/instrumentation\.js was accepted/);
    expect(second).toMatch(/V8 code cache for CommonJS \S*\.next\/server\/chunks\/\S+ was accepted/);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(`${dataDir}-ws`, { recursive: true, force: true });
  }
});
