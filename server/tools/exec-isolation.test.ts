// exec isolation with real processes: the launcher keeps secrets out of the server's environ, and an approved `exec` reaches none of them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRawConfig, resolveConfig } from '../config';
import { tmpDataDir, until } from '../testing/harness';
import { isRunning } from '../testing/procs';
import { createExecTool } from './exec';
import { blockedFor, lookupUser, mkdirAsUser, mkdirFor, prepareExecIsolation, untrustedLink } from './exec-isolation';
import { pidNamespace } from './exec-namespace';
import { onPostgresPass } from '../testing/store-under-test';

const root = path.resolve(import.meta.dirname, '../..');
const PG = onPostgresPass();
const namespaced = 'unshare' in (await pidNamespace());
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECRETS = {
  OPENAI_API_KEY: 'sk-openai-secret-value',
  ANTHROPIC_API_KEY: 'sk-anthropic-secret-value',
  TELEGRAM_BOT_TOKEN: 'telegram-secret-value',
  ...(PG ? { DATABASE_URL: PG_URL } : {}),
};
const environ = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
const childrenOf = (pid: number) =>
  fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        const s = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
        return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);

const gone = (pid: number) => !isRunning(pid);

describe('the launcher (scripts/secrets.mjs)', () => {
  const secretsModule = JSON.stringify(path.join(root, 'scripts/secrets.mjs'));
  // Quotes, backslashes, a dollar, a backtick and a newline: the handoff must not reinterpret any of them.
  const awkward = `sk-"a'b\\c$d\`e\nf`;
  const report = `console.log(JSON.stringify({ pid: process.pid, token: process.env.CROSSTALK_TOKEN, key: process.env.OPENAI_API_KEY, db: process.env.DATABASE_URL, fd: process.env.CROSSTALK_SECRETS_FD ?? null }));
setInterval(() => {}, 1000);`;
  const env = { NODE_ENV: 'test' as const, PATH: process.env.PATH, CROSSTALK_TOKEN: 'launcher-token-secret', OPENAI_API_KEY: awkward, DATABASE_URL: 'postgres://u:pw@db/x', HARMLESS: 'kept' };
  type Line = { pid: number; token: string; key: string; db: string; fd: null };
  const firstLine = async (child: ReturnType<typeof spawn>) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => (buf += d));
    return until(() => buf.includes('\n') && (JSON.parse(buf.split('\n')[0]!) as Line));
  };

  it('re-executes the server in place (same pid) without the secrets in its environment block, and hands them over', async () => {
    const script = `import { launchWithoutSecrets } from ${secretsModule};\nawait launchWithoutSecrets();\n${report}`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const line = await firstLine(child);
      expect(line).toEqual({ pid: child.pid, token: 'launcher-token-secret', key: awkward, db: 'postgres://u:pw@db/x', fd: null });
      const block = environ(line.pid);
      expect(block).toContain('HARMLESS=kept');
      for (const secret of ['launcher-token-secret', 'sk-"a', 'u:pw@db', 'CROSSTALK_SECRETS_JSON']) expect(block).not.toContain(secret);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('starts the server with glibc\'s malloc arenas capped (MALLOC_ARENA_MAX=2), with or without secrets to hand over, unless it is set', async () => {
    const script = `import { launchWithoutSecrets } from ${secretsModule};\nawait launchWithoutSecrets();\n${report}`;
    const { CROSSTALK_TOKEN: _t, OPENAI_API_KEY: _k, DATABASE_URL: _d, ...plain } = env;
    for (const [given, expected] of [[env, '2'], [plain, '2'], [{ ...plain, MALLOC_ARENA_MAX: '4' }, '4']] as const) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: given, stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const line = await firstLine(child);
        // In place (the same pid), so the variable is in the environment the process started with, where glibc reads it.
        expect(line.pid).toBe(child.pid);
        expect(environ(line.pid).split('\0')).toContain(`MALLOC_ARENA_MAX=${expected}`);
      } finally {
        child.kill('SIGKILL');
      }
    }
  });

  it('a launcher that stays (spawnWithSecrets) hands them over too, and when it is SIGKILLed its server ends with it', async () => {
    const server = `import { receiveSecrets } from ${secretsModule};\nreceiveSecrets();\n${report}`;
    const launcher = `import { spawnWithSecrets } from ${secretsModule};
spawnWithSecrets(process.execPath, ['--input-type=module', '-e', ${JSON.stringify(server)}]);
setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', launcher], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let pid = 0;
    try {
      const line = await firstLine(child);
      pid = line.pid;
      expect(line).toMatchObject({ token: 'launcher-token-secret', key: awkward, db: 'postgres://u:pw@db/x', fd: null });
      expect(pid).not.toBe(child.pid);
      for (const secret of ['launcher-token-secret', 'sk-"a', 'u:pw@db']) expect(environ(pid)).not.toContain(secret);
      expect(environ(pid).split('\0')).toContain('MALLOC_ARENA_MAX=2');
      child.kill('SIGKILL');
      await until(() => gone(pid));
    } finally {
      child.kill('SIGKILL');
      if (pid && !gone(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('an approved exec in a real server (npm run worker)', () => {
  let launcher: ChildProcess;
  let serverPid = 0;
  let url = '';
  let token = '';
  const dataDir = tmpDataDir();
  beforeAll(async () => {
    fs.chmodSync(dataDir, 0o755); // as `mkdir data` leaves it: the server closes it
    const configFile = path.join(`${dataDir}-cfg.json`);
    fs.writeFileSync(configFile, JSON.stringify({ agents: [{ id: 'main', tools: { exec: 'ask' } }, { id: 'helper', tools: { exec: 'auto' }, exec: { env: ['TELEGRAM_BOT_TOKEN'] } }] }));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/TOKEN|_KEY|DATABASE_URL/.test(k)) env[k] = v;
    launcher = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'server/worker.ts')], {
      cwd: root,
      env: {
        ...env,
        ...SECRETS,
        ...(PG ? { CROSSTALK_PG_SCHEMA: `t_${path.basename(dataDir).replace(/[^a-z0-9]/gi, '').toLowerCase()}` } : {}),
        NODE_ENV: 'test',
        CROSSTALK_DATA_DIR: dataDir,
        CROSSTALK_WORKSPACES: `${dataDir}-ws`,
        CROSSTALK_CONFIG: configFile,
        CROSSTALK_LOG_LEVEL: 'info',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buf = '';
    launcher.stdout!.on('data', (d: Buffer) => (buf += d));
    url = await until(() => /"url":"(http:[^"]+)","msg":"crosstalk worker listening"/.exec(buf)?.[1], 60_000);
    // The launcher's child that runs worker.ts (tsx gives it an esbuild child as well).
    // It listens by now; with no such child the launcher is the server itself.
    serverPid = childrenOf(launcher.pid!).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('server/worker.ts')) ?? launcher.pid!;
    token = fs.readFileSync(path.join(dataDir, 'token'), 'utf8').trim();
  }, 90_000);
  afterAll(async () => {
    launcher?.kill('SIGTERM');
    if (serverPid) await until(() => gone(serverPid), 20_000).catch(() => process.kill(serverPid, 'SIGKILL'));
  });

  const rpc = async <T,>(method: string, params: unknown): Promise<T> => {
    const res = await fetch(`${url}/api/gateway`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const body = await res.json();
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };

  it('the server’s environ holds none of the secrets it was started with, while the server has them', async () => {
    expect(serverPid).toBe(launcher.pid); // re-executed in place
    for (const value of Object.values(SECRETS)) expect(environ(serverPid)).not.toContain(value);
    // The server has them: an agent configured to pass one on to exec (agents[].exec.env; not one of the server's own, which it refuses) gets it.
    const started = await rpc<{ runId: string }>('agent', { sessionKey: 'agent:helper:env', message: '/tool exec {"command":"printenv TELEGRAM_BOT_TOKEN"}' });
    const w = await rpc<{ response: string }>('agent.wait', { runId: started.runId, timeoutMs: 60_000 });
    expect(JSON.parse(w.response.slice('exec: '.length))).toMatchObject({ status: 'ok', stdout: `${SECRETS.TELEGRAM_BOT_TOKEN}\n` });
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dataDir, 'token')).mode & 0o777).toBe(0o600);
  });

  it.skipIf(process.getuid?.() !== 0)('cannot read the server’s environ (by its parent chain and by its pid), the token file, nor write the store', async () => {
    const ws = path.join(`${dataDir}-ws`, 'main');
    const tokenFile = path.join(dataDir, 'token');
    const store = path.join(dataDir, 'crosstalk.sqlite');
    const probes = [
      // The shell's parent is coreutils' timeout (exec.ts shellArgv), whose parent is the server; in exec's PID
      // namespace timeout is PID 1 there and its parent, outside, shows as 0.
      'p=$PPID; [ "$(cat /proc/$p/comm)" = timeout ] && p=$(cut -d" " -f4 /proc/$p/stat); echo ppid=$p',
      `cat /proc/$p/environ`,
      `cat /proc/${serverPid}/environ`,
      `cat ${path.relative(ws, tokenFile)}`,
      `cat ${tokenFile}`,
      `echo "UPDATE approvals SET status = 'allowed'" >> ${store}`,
      `touch ${path.join(dataDir, 'planted')}`,
    ];
    const command = probes.map((p, i) => `${p} 2>&1; echo "probe${i}=$?"`).join('; ');
    const key = 'agent:main:isolation';
    const started = await rpc<{ runId: string }>('agent', { sessionKey: key, message: `/tool exec ${JSON.stringify({ command })}` });
    const pending = await until(async () => (await rpc<{ approvals: Array<{ approvalId: string; runId: string }> }>('approvals.inbox', {})).approvals.find((a) => a.runId === started.runId));
    await rpc('approvals.resolve', { approvalId: pending.approvalId, decision: 'allow_once' });
    const w = await rpc<{ status: string; response: string }>('agent.wait', { runId: started.runId, timeoutMs: 60_000 });
    expect(w.status).toBe('ok');
    const result = JSON.parse(w.response.slice('exec: '.length)) as { status: string; stdout: string };
    expect(result.status).toBe('ok');
    expect(result.stdout).toContain(namespaced ? 'ppid=0' : `ppid=${serverPid}`); // $p is the server itself, or out of sight
    expect(result.stdout).toContain('probe0=0');
    for (let i = 1; i < probes.length; i++) expect(result.stdout).toMatch(new RegExp(`^probe${i}=[1-9]`, 'm'));
    for (const value of [...Object.values(SECRETS), token]) expect(result.stdout).not.toContain(value);
    expect(fs.existsSync(store) && fs.readFileSync(store).includes('UPDATE approvals')).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'planted'))).toBe(false);
  });
});

describe('a server that cannot isolate exec', () => {
  it('says so at start, naming the reason', () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    const dataDir = tmpDataDir();
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main', exec: { user: 'no-such-user-here' } }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws` });
    prepareExecIsolation(config, log);
    const warning = lines.map((l) => JSON.parse(l) as { level: number; msg: string; agents?: string[] }).find((l) => l.msg.startsWith('exec is not isolated'));
    expect(warning).toMatchObject({ level: 40, agents: ['main'] });
    expect(warning!.msg).toMatch(process.getuid?.() === 0 ? /no user "no-such-user-here"/ : /not root/);
  });
});

describe.skipIf(process.getuid?.() !== 0)('the workspace, as root', () => {
  const nobody = { isolated: true as const, user: 'nobody', uid: 65534, gid: 65534 };
  const capture = () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    return { log, warnings: () => lines.map((l) => JSON.parse(l) as { level: number; msg: string; blocked?: string }).filter((l) => l.level === 40) };
  };

  it('is handed to the exec user once: root’s files become theirs; links and other users’ files do not', () => {
    const dataDir = tmpDataDir();
    const ws = path.join(`${dataDir}-ws`, 'main');
    fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'src', 'a.txt'), 'a');
    const outside = path.join(dataDir, 'outside.txt');
    fs.writeFileSync(outside, 'not theirs');
    fs.symlinkSync(outside, path.join(ws, 'link'));
    fs.linkSync(outside, path.join(ws, 'hard')); // a second name of a file outside
    fs.writeFileSync(path.join(ws, 'theirs.txt'), 'b');
    fs.chownSync(path.join(ws, 'theirs.txt'), 1234, 1234);
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main' }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws` });
    const { log, warnings } = capture();
    prepareExecIsolation(config, log);
    expect(warnings()).toEqual([]);
    const owner = (p: string) => fs.lstatSync(path.join(ws, p)).uid;
    expect([owner('.'), owner('src'), owner('src/a.txt'), owner('link')]).toEqual([65534, 65534, 65534, 65534]);
    expect(fs.statSync(outside).uid).toBe(0); // neither through the symlink nor through the hard link
    expect(owner('theirs.txt')).toBe(1234);
    // Once: a file root adds later stays root's.
    fs.writeFileSync(path.join(ws, 'later.txt'), 'c');
    prepareExecIsolation(config, log);
    expect(owner('later.txt')).toBe(0);
  });

  it('its folders on the way stay root’s, and a workspace swapped for a link the exec user made is not handed over', () => {
    const dataDir = tmpDataDir();
    const wsRoot = `${dataDir}-ws`;
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main' }, { id: 'other' }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: wsRoot });
    const { log, warnings } = capture();
    prepareExecIsolation(config, log);
    // Before: the workspaces' root became nobody's, who could then rename any agent's workspace away.
    expect(fs.lstatSync(wsRoot).uid).toBe(0);
    expect(fs.lstatSync(path.join(wsRoot, 'main')).uid).toBe(65534);
    expect(blockedFor(path.join(wsRoot, 'main'), nobody)).toBeNull();
    // A folder made inside a workspace (a delegate's cwd) is the user's, parents and all.
    mkdirFor(path.join(wsRoot, 'main', 'a', 'b'), nobody);
    expect([fs.lstatSync(path.join(wsRoot, 'main', 'a')).uid, fs.lstatSync(path.join(wsRoot, 'main', 'a', 'b')).uid]).toEqual([65534, 65534]);
    // An install from before: the root is nobody's, and a command swapped `other` for a link to a folder of root's.
    const victim = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-victim-'));
    fs.writeFileSync(path.join(victim, 'secret.txt'), 'root only', { mode: 0o600 });
    fs.rmSync(path.join(wsRoot, 'other'), { recursive: true });
    fs.symlinkSync(victim, path.join(wsRoot, 'other'));
    fs.lchownSync(path.join(wsRoot, 'other'), 65534, 65534);
    fs.lchownSync(wsRoot, 65534, 65534);
    expect(untrustedLink(path.join(wsRoot, 'other'))).toBe(path.join(wsRoot, 'other'));
    prepareExecIsolation(config, log);
    expect(warnings().filter((w) => w.msg.startsWith('the folder holding the workspaces belongs to nobody'))).toHaveLength(1);
    // Before: the next start followed the link and gave the folder and everything root owned in it to nobody.
    expect([fs.statSync(victim).uid, fs.statSync(path.join(victim, 'secret.txt')).uid]).toEqual([0, 0]);
    expect(warnings().map((w) => w.msg)).toContainEqual(expect.stringContaining('cannot prepare the workspace'));
    // A link root made (an operator's) is followed as before.
    fs.rmSync(path.join(wsRoot, 'other'));
    fs.symlinkSync(victim, path.join(wsRoot, 'other'));
    expect(untrustedLink(path.join(wsRoot, 'other'))).toBeNull();
    fs.rmSync(victim, { recursive: true, force: true });
  });

  it('a delegate’s cwd is made as the exec user: a folder on its way swapped for a link to a folder of root’s leads nowhere', async () => {
    const dataDir = tmpDataDir();
    const wsRoot = `${dataDir}-ws`;
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main' }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: wsRoot });
    prepareExecIsolation(config, capture().log);
    const ws = path.join(wsRoot, 'main');
    // What a command racing the check left at the mkdir: `sub` (checked a moment ago as a folder) is now its link to a
    // folder of root's. Root's mkdir followed it, made `pwned` there and gave it to nobody.
    const rootOnly = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-rootonly-'));
    fs.chmodSync(rootOnly, 0o755);
    fs.symlinkSync(rootOnly, path.join(ws, 'sub'));
    fs.lchownSync(path.join(ws, 'sub'), 65534, 65534);
    expect(mkdirAsUser(path.join(ws, 'sub', 'pwned'), nobody)).toBe(false);
    expect(fs.readdirSync(rootOnly)).toEqual([]);
    // A plain new folder is made, and is the user's.
    expect(mkdirAsUser(path.join(ws, 'a', 'b'), nobody)).toBe(true);
    expect([fs.lstatSync(path.join(ws, 'a')).uid, fs.lstatSync(path.join(ws, 'a', 'b')).uid]).toEqual([65534, 65534]);
    // Through the tool: a delegate session's cwd is made on its first command, there.
    const ctx = { agent: config.agents[0]!, signal: new AbortController().signal, runId: 'r', sessionKey: 'agent:main:subagent:x', callId: 'c', sessionCwd: 'p/q' };
    const r = (await createExecTool().execute({ command: 'id -u; pwd -P' }, ctx as never)) as { stdout: string };
    expect(r.stdout).toBe(`65534\n${fs.realpathSync(path.join(ws, 'p', 'q'))}\n`);
    expect(fs.lstatSync(path.join(ws, 'p', 'q')).uid).toBe(65534);
    fs.rmSync(rootOnly, { recursive: true, force: true });
  });

  // Before: workspaces were made 0755 and commands ran with umask 022: an agent's files were any other exec user's to read.
  const daemon = lookupUser('daemon');
  it.skipIf(!daemon)(`agents with different exec users cannot read each other’s files: workspaces 0700, commands umask 077${daemon ? '' : ' (skipped: no user daemon here)'}`, async () => {
    // Not under /tmp: there each command's own /tmp (its PID namespace) would hide the other workspace anyway.
    const scratch = path.join(root, 'node_modules', '.cache');
    fs.mkdirSync(scratch, { recursive: true });
    const base = fs.mkdtempSync(path.join(scratch, 'ct-ws-'));
    fs.chmodSync(base, 0o755);
    try {
      const dataDir = tmpDataDir();
      const config = resolveConfig(parseRawConfig({ agents: [{ id: 'a' }, { id: 'b', exec: { user: 'daemon' } }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: base });
      const [a, b] = config.agents as [(typeof config.agents)[0], (typeof config.agents)[0]];
      // a's as an earlier version left it: the exec user's, mode 0755. The next start closes it; b's is made closed.
      fs.mkdirSync(a.workspace, { mode: 0o755 });
      fs.chmodSync(a.workspace, 0o755);
      fs.chownSync(a.workspace, 65534, 65534);
      prepareExecIsolation(config, capture().log);
      const run = async (agent: typeof a, command: string) =>
        (await createExecTool().execute({ command }, { agent, signal: new AbortController().signal, runId: 'r', sessionKey: `agent:${agent.id}:main`, callId: 'c' } as never)) as { stdout: string; stderr: string };
      const wrote = await run(a, 'id -u; umask; echo secret-of-a > notes.txt; mkdir sub; stat -c %a notes.txt sub');
      const seen = await run(b, `id -u; cat ${a.workspace}/notes.txt; echo rc=$?; ls ${a.workspace}; echo rc=$?`);
      expect(seen.stdout + seen.stderr).not.toContain('secret-of-a');
      expect(seen.stdout).toBe(`${daemon!.uid}\nrc=1\nrc=2\n`);
      expect(seen.stderr).toMatch(/Permission denied/);
      // Each half alone would do: the workspace closed, and what a command makes its user's alone.
      expect(wrote.stdout).toBe('65534\n0077\n600\n700\n');
      expect([fs.statSync(a.workspace).mode & 0o777, fs.statSync(b.workspace).mode & 0o777]).toEqual([0o700, 0o700]);
      expect(fs.statSync(b.workspace).uid).toBe(daemon!.uid);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a config file the exec user can read (its secrets) is named in a warning at start, with the chmod that fixes it', () => {
    const dataDir = tmpDataDir();
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main' }] }), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_WORKSPACES: `${dataDir}-ws` });
    const file = path.join(dataDir, '..', `ct-config-${path.basename(dataDir)}.json`);
    fs.writeFileSync(file, '{"channels":{"webhook":{"secret":"whsec"}}}', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const open = capture();
    prepareExecIsolation(config, open.log, file);
    expect(open.warnings().map((w) => w.msg)).toContainEqual(expect.stringContaining(`chmod 600 ${file}`));
    fs.chmodSync(file, 0o600);
    const closed = capture();
    prepareExecIsolation(config, closed.log, file);
    expect(closed.warnings().map((w) => w.msg).filter((m) => m.includes('config file'))).toEqual([]);
    fs.rmSync(file);
  });

  it('out of the exec user’s reach: a warning at start, and `forbidden` from the call', async () => {
    const dataDir = tmpDataDir();
    const closed = fs.mkdtempSync(path.join(dataDir, '..', 'closed-')); // mode 0700, root's
    const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main', workspace: path.join(closed, 'ws') }, { id: 'writer', workspace: path.join(closed, 'ws2') }] }), { CROSSTALK_DATA_DIR: dataDir });
    const { log, warnings } = capture();
    prepareExecIsolation(config, log);
    // One warning for the folder both workspaces are under, naming both agents (not one per agent).
    expect(warnings()).toMatchObject([{ blocked: closed, agents: ['main', 'writer'] }]);
    expect(blockedFor(path.join(closed, 'ws'), nobody)).toBe(closed);
    const ctx = { agent: config.agents[0]!, signal: new AbortController().signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
    expect(await createExecTool().execute({ command: 'id' }, ctx as never)).toMatchObject({ status: 'error', error: { code: 'forbidden', message: expect.stringContaining(closed) } });
  });
});
