// A gateway killed with SIGKILL (a crash, the OOM killer) leaves none of its stdio MCP servers running, and a stdio
// server whose command is missing is still reported as missing (setpriv's launch in connection.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../logger';
import { McpConnection } from './connection';

const root = path.resolve(__dirname, '..', '..');
const STDIO_SERVER = path.join(root, 'server', 'mcp', 'testing', 'stdio-server.mjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pids of the processes whose parent is `ppid` (from /proc). */
function childrenOf(ppid: number): { pid: number; cmd: string }[] {
  const out: { pid: number; cmd: string }[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid) out.push({ pid: Number(d), cmd: fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const started: ChildProcess[] = [];
const leftovers: number[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const pid of leftovers.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')('stdio MCP servers do not outlive a killed gateway', () => {
  it('SIGKILL of the gateway process ends its stdio MCP server within a few seconds', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-orphans-'));
    dirs.push(dir);
    // A server that outlives its stdin closing (a timer of its own, as server-everything's): only a signal ends it.
    const lingering = path.join(dir, 'lingering-server.mjs');
    fs.writeFileSync(lingering, `import ${JSON.stringify(STDIO_SERVER)};\nsetInterval(() => undefined, 1000);\n`);
    const config = { mcp: { servers: { files: { command: process.execPath, args: [lingering] } } } };
    fs.writeFileSync(
      path.join(dir, 'boot.mts'),
      `import { createRuntime } from ${JSON.stringify(path.join(root, 'server/boot.ts'))};
import { parseRawConfig, resolveConfig } from ${JSON.stringify(path.join(root, 'server/config.ts'))};
import { createLogger } from ${JSON.stringify(path.join(root, 'server/logger.ts'))};
await createRuntime({ config: resolveConfig(parseRawConfig(${JSON.stringify(config)}), { CROSSTALK_DATA_DIR: ${JSON.stringify(path.join(dir, 'data'))} }), log: createLogger('silent') });
console.log('booted');
setInterval(() => undefined, 1000);\n`,
    );
    const gw = spawn(process.execPath, ['--import', 'tsx', path.join(dir, 'boot.mts')], { cwd: root, env: { ...process.env, DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(gw);
    let out = '';
    gw.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    gw.stderr!.on('data', (c: Buffer) => (out += c.toString()));

    // Connected: the MCP server (node …/lingering-server.mjs, through setpriv or not) is a child of the gateway.
    let server: number | undefined;
    for (let until = Date.now() + 60_000; Date.now() < until && server === undefined; await sleep(100)) {
      if (gw.exitCode !== null) throw new Error(`gateway exited: ${out}`);
      server = childrenOf(gw.pid!).find((c) => c.cmd.includes('lingering-server.mjs'))?.pid;
    }
    expect(server, out).toBeDefined();
    leftovers.push(server!);
    await sleep(300);
    expect(alive(server!)).toBe(true);

    gw.kill('SIGKILL');
    for (let until = Date.now() + 5_000; Date.now() < until && alive(server!); ) await sleep(100);
    expect(alive(server!)).toBe(false);
  }, 90_000);

  /** The error a stdio server with this command is reported down with. */
  async function failure(command: string): Promise<string | undefined> {
    const states: { state: string; error?: string }[] = [];
    const conn = new McpConnection('broken', { command }, {
      log: createLogger('silent'),
      reconnectBaseMs: 60_000,
      reconnectMaxMs: 60_000,
      onTools: () => undefined,
      onState: (state, error) => states.push({ state, error }),
    });
    await conn.start();
    for (let until = Date.now() + 10_000; Date.now() < until && !states.some((s) => s.state === 'failed'); ) await sleep(50);
    await conn.stop();
    return states.find((s) => s.state === 'failed')?.error;
  }

  it('a missing command is still reported as missing', async () => {
    const missing = path.join(os.tmpdir(), `ct-orphans-no-such-binary-${process.pid}`);
    expect(await failure(missing)).toBe(`spawn ${missing} ENOENT`);
    expect(await failure(`ct-orphans-no-such-command-${process.pid}`)).toBe(`spawn ct-orphans-no-such-command-${process.pid} ENOENT`);
  }, 20_000);

  it('a command that cannot be executed (its interpreter is missing) is reported with the reason, not "connection closed"', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-orphans-'));
    dirs.push(dir);
    const script = path.join(dir, 'no-interpreter.sh');
    fs.writeFileSync(script, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const error = await failure(script);
    // Through setpriv its own line; without it (no setpriv) spawn's ENOENT.
    expect(error).toBe(fs.existsSync('/usr/bin/setpriv') ? `failed to execute ${script}: No such file or directory` : `spawn ${script} ENOENT`);
  }, 20_000);
});
