// A gateway killed with SIGKILL takes its stdio MCP servers with it (setpriv --pdeathsig on Linux, connection.ts stdioSpawn).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildServer, until } from '../testing/harness';
import { isRunning } from '../testing/procs';
import { createLogger } from '../logger';
import { McpConnection, stdioSpawn } from './connection';

const STDIO_SERVER = path.join(import.meta.dirname, 'testing', 'stdio-server.mjs');
const hasSetpriv = process.platform === 'linux' && fs.existsSync('/usr/bin/setpriv');

describe('stdio MCP servers and the gateway process', () => {
  const dirs: string[] = [];
  const pids: number[] = [];
  afterAll(() => {
    for (const pid of pids) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it.runIf(hasSetpriv)('a gateway killed with SIGKILL leaves no stdio MCP server running', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-mcp-orphans-'));
    dirs.push(dir, `${dir}-ws`);
    const log = path.join(dir, 'mcp.log');
    const configFile = path.join(dir, 'crosstalk.config.json');
    // The server outlives its stdin (MCP_TEST_LINGER), as server-everything does: only a signal ends it.
    fs.writeFileSync(configFile, JSON.stringify({ mcp: { servers: { lingering: { command: process.execPath, args: [STDIO_SERVER], env: { MCP_TEST_LOG: log, MCP_TEST_LINGER: '1' } } } } }));
    const gw = await startChildServer({ dataDir: path.join(dir, 'data'), configFile });
    const pid = await until(() => {
      const m = fs.existsSync(log) ? /start (\d+)/.exec(fs.readFileSync(log, 'utf8')) : null;
      return m ? Number(m[1]) : undefined;
    }, 20_000);
    pids.push(pid);
    await until(async () => (await gw.rpc<{ mcp?: Array<{ server: string; state: string }> }>('status')).mcp?.find((s) => s.server === 'lingering')?.state === 'ready', 20_000);
    expect(isRunning(pid)).toBe(true);
    gw.kill();
    await gw.exited;
    await until(() => !isRunning(pid), 5_000);
  }, 60_000);

  it.runIf(hasSetpriv)('spawns a command it finds through setpriv, and one it does not find as it is (its ENOENT unchanged)', () => {
    expect(stdioSpawn(process.execPath, ['a.mjs'], process.env.PATH, undefined)).toEqual({ command: '/usr/bin/setpriv', args: ['--pdeathsig', 'KILL', '--', process.execPath, 'a.mjs'] });
    expect(stdioSpawn('node', [], path.dirname(process.execPath), undefined).command).toBe('/usr/bin/setpriv');
    const missing = path.join(os.tmpdir(), 'ct-no-such-binary');
    expect(stdioSpawn(missing, ['x'], process.env.PATH, undefined)).toEqual({ command: missing, args: ['x'] });
    expect(stdioSpawn('ct-no-such-binary', [], process.env.PATH, undefined)).toEqual({ command: 'ct-no-such-binary', args: [] });
  });

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
    await until(() => states.some((s) => s.state === 'failed'), 10_000);
    await conn.stop();
    return states.find((s) => s.state === 'failed')?.error;
  }

  it('a missing command is reported as spawn ENOENT; one found but not executable, with setpriv\'s reason', async () => {
    const missing = path.join(os.tmpdir(), `ct-orphans-no-such-binary-${process.pid}`);
    expect(await failure(missing)).toBe(`spawn ${missing} ENOENT`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-mcp-orphans-'));
    dirs.push(dir);
    const script = path.join(dir, 'no-interpreter.sh');
    fs.writeFileSync(script, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    expect(await failure(script)).toBe(hasSetpriv ? `failed to execute ${script}: No such file or directory` : `spawn ${script} ENOENT`);
  }, 30_000);
});
