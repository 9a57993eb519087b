// `npm run worker`'s start: PORT by npm start's rule, and a port it cannot listen on stops it with one line, before it boots anything.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const TSX = path.join(root, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');

/** The worker on SQLite in a data dir of its own; resolves when it exits (or is killed after 60 s: a worker that kept running). */
function worker(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; dataDir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-worker-port-'));
  const dataDir = path.join(dir, 'data');
  const child = spawn(process.execPath, ['--import', TSX, path.join(root, 'server', 'worker.ts')], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: path.join(dir, 'ws'), HOST: '127.0.0.1', ...env } as unknown as NodeJS.ProcessEnv,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, dataDir });
    }),
  );
}

describe('the worker\'s PORT', () => {
  it('refuses a PORT npm start refuses, with one line and exit 1, before anything is started (before: "ready", then a RangeError stack trace; abc: port 3000)', async () => {
    for (const port of ['70000', '-1', '1.5', 'abc']) {
      const r = await worker({ PORT: port });
      expect(r.code, `PORT=${port}`).toBe(1);
      expect(r.stderr.trim(), `PORT=${port}`).toBe(`crosstalk: PORT must be an integer 0-65535, got "${port}"`);
      expect(r.stdout).not.toMatch(/ready/);
      expect(fs.existsSync(r.dataDir)).toBe(false);
    }
  }, 120_000);

  it('a port in use stops it with one line and exit 1, before it opens the store or recovers a run (before: an unhandled \'error\' event)', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const r = await worker({ PORT: String(port) });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(`crosstalk: cannot listen on 127.0.0.1:${port}: the port is in use (EADDRINUSE)`);
      // Listening comes first: the store (and with it every run to recover) was never opened.
      expect(fs.existsSync(path.join(r.dataDir, 'crosstalk.sqlite'))).toBe(false);
    } finally {
      taken.close();
    }
  }, 120_000);

  it('listening first, it still boots and answers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-worker-port-'));
    const child = spawn(process.execPath, ['--import', TSX, path.join(root, 'server', 'worker.ts')], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, CROSSTALK_DATA_DIR: path.join(dir, 'data'), CROSSTALK_WORKSPACES: path.join(dir, 'ws'), PORT: '0' } as unknown as NodeJS.ProcessEnv,
    });
    try {
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          out += d;
          const m = /"url":"(http:[^"]+)".*crosstalk worker listening/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`worker exited ${code}: ${out}`)));
      });
      const token = fs.readFileSync(path.join(dir, 'data', 'token'), 'utf8').trim();
      const res = await fetch(`${url}/api/gateway`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agents.list', params: {} }) });
      expect(((await res.json()) as { result: { agents: Array<{ agentId: string }> } }).result.agents.map((a) => a.agentId)).toEqual(['main', 'researcher', 'writer']);
    } finally {
      child.kill('SIGKILL');
    }
  }, 120_000);
});
