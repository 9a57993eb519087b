// exec over the real run loop: a minimal environment, workspaces outside the data dir, settling when a grandchild holds the pipes, a byte cap.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { startTestServer, tmpDataDir, type TestServer, until } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import { isRunning, sleepers } from '../testing/procs';
import { pidNamespace } from './exec-namespace';
import { createExecTool, DEFAULT_TIMEOUT_S, OUTPUT_CAP, utf8Prefix } from './exec';

let s: TestServer;
const namespaced = 'unshare' in (await pidNamespace());
beforeAll(async () => {
  process.env.CROSSTALK_TEST_PASSED = 'visible-by-name';
  process.env.DATABASE_URL_FAKE_SECRET = 'server-secret';
  s = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'auto' }, exec: { env: ['CROSSTALK_TEST_PASSED'] } }] } });
});
afterAll(async () => {
  await s?.close();
});

type Result = { status: string; exitCode?: number; stdout?: string; stderr?: string; truncated?: boolean; error?: { code: string } };
async function exec(args: Record<string, unknown>, sessionKey = 'agent:main:exec-tests'): Promise<Result> {
  const r = await s.rpc<{ runId: string }>('agent', { sessionKey, message: `/tool exec ${JSON.stringify(args)}` });
  const w = await s.rpc<{ response: string }>('agent.wait', { runId: r.runId, timeoutMs: 60_000 });
  return JSON.parse(w.response.slice('exec: '.length));
}

describe('exec environment', () => {
  it('gets PATH, HOME, LANG and the names in exec.env, never the server’s own variables', async () => {
    const out = await exec({ command: 'env' });
    const names = out.stdout!.trim().split('\n').map((l) => l.split('=')[0]);
    expect(names).toContain('PATH');
    expect(out.stdout).toContain('CROSSTALK_TEST_PASSED=visible-by-name');
    expect(out.stdout).not.toContain('server-secret');
    expect(out.stdout).not.toContain('CROSSTALK_TOKEN');
    expect(out.stdout).not.toContain('test-token');
    expect(names.every((n) => ['PATH', 'HOME', 'LANG', 'CROSSTALK_TEST_PASSED', 'PWD', 'SHLVL', '_', 'OLDPWD'].includes(n!))).toBe(true);
  });

  it('runs in a workspace outside the data dir, and cannot read the token file there by its real paths', async () => {
    const ws = s.rt.config.agents[0]!.workspace;
    expect(ws.startsWith(s.dataDir + path.sep)).toBe(false);
    // The harness passes CROSSTALK_TOKEN, so write the file a first start generates, where it generates it.
    const tokenFile = path.join(s.dataDir, 'token');
    fs.writeFileSync(tokenFile, 'generated-token-secret\n', { mode: 0o600 });
    const rel = path.relative(ws, tokenFile); // ../../crosstalk-test-…/token
    expect(path.resolve(ws, rel)).toBe(tokenFile);
    const out = await exec({ command: `pwd; cat ${rel} 2>&1; echo rc=$?; cat ${tokenFile} 2>&1; echo rc=$?` });
    const lines = out.stdout!.split('\n');
    expect(lines[0]).toBe(ws);
    expect(out.stdout).not.toContain('generated-token-secret');
    expect(out.stdout!.match(/^rc=1$/gm)).toHaveLength(2);
    // In a namespace the data dir under /tmp is not even there (the command's /tmp is its own): no such file.
    expect(out.stdout!.match(/Permission denied|No such file or directory/g)).toHaveLength(2);
  });

  // Isolation needs root (README, Security); a server that is not root says so at start (exec-isolation.test.ts).
  it.skipIf(process.getuid?.() !== 0)('as root, runs as nobody with the workspace as HOME: it cannot read the server’s environ or write the store', async () => {
    const store = path.join(s.dataDir, 'crosstalk.sqlite');
    // The shell's parent is coreutils' timeout (exec.ts shellArgv), whose parent is the server.
    const server = 'p=$PPID; [ "$(cat /proc/$p/comm)" = timeout ] && p=$(cut -d" " -f4 /proc/$p/stat)';
    const out = await exec({ command: `id -u; echo "$HOME"; ${server}; cat /proc/$p/environ 2>&1; echo rc=$?; echo pwned >> ${store}; echo rc=$?; ls ${s.dataDir} 2>&1; echo rc=$?` });
    const [uid, home] = out.stdout!.split('\n');
    expect(Number(uid)).toBe(65534);
    expect(home).toBe(fs.realpathSync(s.rt.config.agents[0]!.workspace));
    expect(out.stdout!.match(/^rc=[12]$/gm)).toHaveLength(3);
    expect(out.stdout).not.toContain('rc=0');
    expect(out.stdout + out.stderr!).not.toContain('test-token');
    expect(fs.existsSync(store) && fs.readFileSync(store).includes('pwned')).toBe(false); // PostgreSQL: no store file, the data dir still refuses it
    expect(fs.statSync(s.dataDir).mode & 0o777).toBe(0o700);
  });

  it('defaults workspaces to ./workspaces/<agentId> in the start directory, and refuses one inside the data dir', () => {
    const dataDir = tmpDataDir();
    const c = loadConfig({ CROSSTALK_CONFIG: undefined, CROSSTALK_DATA_DIR: dataDir });
    expect(c.agents[0]!.workspace).toBe(path.resolve(process.cwd(), 'workspaces', 'main'));
    const f = path.join(tmpDataDir(), 'c.json');
    fs.writeFileSync(f, JSON.stringify({ agents: [{ id: 'main', workspace: path.join(dataDir, 'workspaces', 'main') }] }));
    expect(() => loadConfig({ CROSSTALK_CONFIG: f, CROSSTALK_DATA_DIR: dataDir })).toThrow(/agents\.0\.workspace.*inside the data dir/);
    // The README's example path resolves against the start directory, not data/data/….
    fs.writeFileSync(f, JSON.stringify({ agents: [{ id: 'main', workspace: './workspaces/main' }] }));
    expect(loadConfig({ CROSSTALK_CONFIG: f, CROSSTALK_DATA_DIR: dataDir }).agents[0]!.workspace).toBe(path.resolve(process.cwd(), 'workspaces/main'));
  });
});

describe('exec settles', () => {
  it('on exit, even when a grandchild in its own session holds the pipes', async () => {
    const out = await exec({ command: 'setsid sleep 45 & echo started' });
    expect(out).toMatchObject({ status: 'ok', exitCode: 0, stdout: 'started\n' });
  });

  it('on timeout, even when a grandchild holds the pipes', async () => {
    const out = await exec({ command: 'setsid sleep 45 & sleep 45', timeoutSeconds: 1 });
    expect(out).toMatchObject({ status: 'error', error: { code: 'timeout' } });
  });

  // Before: the timeout's error was all the model got, whatever the command had printed.
  it('on timeout, with what the command printed until then, capped as ever', async () => {
    const out = await exec({ command: `echo before; echo on-stderr >&2; head -c ${OUTPUT_CAP} /dev/zero | tr '\\0' a; sleep 45`, timeoutSeconds: 1 });
    expect(out).toMatchObject({ status: 'error', error: { code: 'timeout', message: 'command timed out after 1s' }, stderr: 'on-stderr\n', truncated: true });
    expect(out.stdout).toBe(`before\n${'a'.repeat(OUTPUT_CAP - 'before\n'.length)}`);
  });

  it('on an agent.cancel that lands after the call was approved, before the command started: it never starts', async () => {
    const key = 'agent:main:exec-cancel-early';
    const { store, orchestrator } = s.rt;
    const mark = store.markToolStarted.bind(store);
    // The cancel lands between the call's durable start mark and the tool's own start.
    (store as any).markToolStarted = async (runId: string, callId: string, sessionKey: string) => {
      const won = await mark(runId, callId, sessionKey);
      await orchestrator.cancel(runId);
      return won;
    };
    try {
      const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command":"sleep 30"}' });
      const w = await s.rpc<{ status: string; error: string }>('agent.wait', { runId: r.runId, timeoutMs: 20_000 });
      expect(w).toMatchObject({ status: 'error', error: 'cancelled' });
      const h = (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey: key, includeTools: true })).messages;
      expect(h.find((m) => m.kind === 'tool_result')?.tool.result).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
    } finally {
      (store as any).markToolStarted = mark;
    }
  });

  it('on an interrupt (agent.cancel), even when a grandchild holds the pipes', async () => {
    const key = 'agent:main:exec-cancel';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool exec {"command":"setsid sleep 45 & sleep 45"}' });
    await until(async () => (await s.rpc<{ messages: Array<{ kind: string }> }>('chat.history', { sessionKey: key, includeTools: true })).messages.some((m) => m.kind === 'tool_call'));
    await s.rpc('agent.cancel', { runId: r.runId });
    const w = await s.rpc<{ status: string; error: string }>('agent.wait', { runId: r.runId, timeoutMs: 20_000 });
    expect(w).toMatchObject({ status: 'error', error: 'cancelled' });
    // The session is free again.
    const next = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'after' });
    expect((await s.rpc<{ response: string }>('agent.wait', { runId: next.runId })).response).toBe('echo: after');
  });
});

// `sleep <mark>` finds a command's process in /proc: a mark of each store's own, as both projects may run this file at once.
const MARK = onPostgresPass() ? '46' : '45';

describe('exec ends its whole process tree', () => {
  const ws = () => s.rt.config.agents[0]!.workspace;
  /**
   * A grandchild in a session of its own, output elsewhere: neither its group, nor its session, nor the pipes hold it;
   * `sleep <mark>` finds it in /proc (its own `$$` is another number inside exec's PID namespace). With `closeMarker`
   * it also closes fd 3, the marker exec-tree.ts finds it by.
   */
  const escapee = (file: string, mark: string, closeMarker = false) =>
    `setsid sh -c '${closeMarker ? 'exec 3>&-; ' : ''}echo x > ${file}; exec sleep ${mark}' >/dev/null 2>&1 & while [ ! -s ${file} ]; do sleep 0.05; done`;
  const one = async (mark: string) => {
    await until(() => sleepers(mark).length === 1);
    return sleepers(mark)[0]!;
  };

  it('when the command exits: a setsid grandchild does not outlive it', async () => {
    const out = await exec({ command: `${escapee('exit.pid', `${MARK}.001`)}; echo started` });
    expect(out).toMatchObject({ status: 'ok', exitCode: 0, stdout: 'started\n' });
    await until(() => sleepers(`${MARK}.001`).length === 0);
  });

  it.runIf(namespaced)('when the command exits: nor one that also closed fd 3 (PID namespace)', async () => {
    const out = await exec({ command: `${escapee('exit-fd3.pid', `${MARK}.002`, true)}; echo started` });
    expect(out).toMatchObject({ status: 'ok', exitCode: 0, stdout: 'started\n' });
    // Without the namespace nothing marks it as the command's: it ran its 45 s.
    await until(() => sleepers(`${MARK}.002`).length === 0);
  });

  it.runIf(namespaced)('a command sees its own processes only', async () => {
    const out = await exec({ command: `test -e /proc/${process.pid} && echo server-seen-$((1+1)); cat /proc/1/cmdline | tr '\\0' ' '` });
    expect(out.stdout).not.toContain('server-seen-2'); // the command line holds the words, not the answer
    expect(out.stdout).toMatch(/^(\S*\/)?timeout |^\/bin\/sh /);
  });

  it.runIf(namespaced && process.getuid?.() === 0)('its first process (the deadline’s timeout) is root’s: the command, as nobody, cannot ptrace or signal it (probe R)', async () => {
    // Before: unshare dropped to nobody for the namespace's first process too, and a command attached to it with ptrace,
    // made it ignore its deadline and leave the call's session: its processes outlived the call and the gateway.
    const out = await exec({ command: `id -u; grep '^Uid:' /proc/1/status; kill -0 1 2>/dev/null; echo signal=$?; kill -STOP 1 2>/dev/null; echo stop=$?` });
    const [uid, status] = out.stdout!.split('\n');
    expect(Number(uid)).toBe(65534);
    expect(status!.split(/\s+/).slice(1, 5)).toEqual(['0', '0', '0', '0']); // real, effective, saved, filesystem
    expect(out.stdout).toMatch(/^signal=1$/m);
    expect(out.stdout).toMatch(/^stop=1$/m);
  });

  it('is the first the kernel’s OOM killer ends: oom_score_adj 1000, for what it starts too; the server’s stays as it was', async () => {
    const out = await exec({ command: 'cat /proc/self/oom_score_adj; sh -c "cat /proc/self/oom_score_adj"' });
    expect(out.stdout).toBe('1000\n1000\n');
    expect(fs.readFileSync('/proc/self/oom_score_adj', 'utf8').trim()).not.toBe('1000');
  });

  it('on timeout', async () => {
    const out = await exec({ command: `${escapee('timeout.pid', `${MARK}.003`)}; sleep 45`, timeoutSeconds: 1 });
    expect(out).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    await until(() => sleepers(`${MARK}.003`).length === 0);
  });

  it('on agent.cancel (the run ends with it)', async () => {
    const key = 'agent:main:exec-tree-cancel';
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool exec ${JSON.stringify({ command: `${escapee('cancel.pid', `${MARK}.004`)}; sleep 45` })}` });
    const pid = await one(`${MARK}.004`);
    expect(isRunning(pid)).toBe(true);
    expect(fs.existsSync(path.join(ws(), 'cancel.pid'))).toBe(true);
    await s.rpc('agent.cancel', { runId: r.runId });
    expect(await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'error', error: 'cancelled' });
    await until(() => !isRunning(pid));
  });
});

describe('exec cwd', () => {
  it('is checked by real path: a symlink out of the workspace is refused, one inside it is followed', async () => {
    expect(await exec({ command: 'ln -s / escape; ln -s .. up; mkdir -p real/sub; ln -s real/sub inner' })).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(await exec({ command: 'pwd', cwd: 'escape' })).toMatchObject({ status: 'error', error: { code: 'forbidden' } });
    expect(await exec({ command: 'pwd', cwd: 'up' })).toMatchObject({ status: 'error', error: { code: 'forbidden' } });
    expect(await exec({ command: 'pwd', cwd: 'escape/tmp' })).toMatchObject({ status: 'error', error: { code: 'forbidden' } });
    expect(await exec({ command: 'pwd', cwd: 'inner' })).toMatchObject({ status: 'ok', stdout: `${path.join(fs.realpathSync(s.rt.config.agents[0]!.workspace), 'real', 'sub')}\n` });
  });

  it('the description’s default timeout is the one the code uses', () => {
    const tool = createExecTool();
    expect(DEFAULT_TIMEOUT_S).toBe(120);
    expect(tool.description).toContain(`default ${DEFAULT_TIMEOUT_S})`);
    expect((tool.inputSchema as any).shape.timeoutSeconds.description).toContain(`Default ${DEFAULT_TIMEOUT_S}.`);
  });
});

describe('exec output cap', () => {
  it('counts bytes and never splits a character', async () => {
    // 40 000 × "é" (2 bytes each) + "€" (3 bytes): more than 64 KiB of UTF-8, fewer than 64 Ki UTF-16 units.
    const out = await exec({ command: `i=0; while [ $i -lt 40000 ]; do printf 'é'; i=$((i+1)); done; printf '€'` });
    expect(out.truncated).toBe(true);
    expect(Buffer.byteLength(out.stdout!)).toBeLessThanOrEqual(OUTPUT_CAP);
    expect(Buffer.byteLength(out.stdout!)).toBeGreaterThan(OUTPUT_CAP - 4);
    expect(out.stdout).not.toContain('\uFFFD');
    expect(new Set(out.stdout)).toEqual(new Set(['é']));
  });

  it('utf8Prefix keeps whole characters', () => {
    const buf = Buffer.from('a€b😀', 'utf8'); // 1 + 3 + 1 + 4 bytes
    expect(utf8Prefix(buf, 2).toString()).toBe('a');
    expect(utf8Prefix(buf, 4).toString()).toBe('a€');
    expect(utf8Prefix(buf, 8).toString()).toBe('a€b');
    expect(utf8Prefix(buf, 9).toString()).toBe('a€b😀');
  });
});
