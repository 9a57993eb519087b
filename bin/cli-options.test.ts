// The CLI checks every option before any request, prints the server's issues with a bad request, and exits 3 for an agent that is not there (tail too).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, tmpDataDir, type TestServer } from '../server/testing/harness';

const CLI = path.join(import.meta.dirname, 'crosstalk.mjs');
let s: TestServer;
/** The CLI's exit code and output; killed after 20 s (a command that follows forever). */
const cli = (args: string[], o: { env?: Record<string, string>; cwd?: string; token?: boolean } = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const auth = o.token === false ? [] : ['--token', TEST_TOKEN];
    execFile(process.execPath, [CLI, ...args, '--url', s.url, ...auth], { timeout: 20_000, cwd: o.cwd, env: { PATH: process.env.PATH ?? '', ...o.env } as unknown as NodeJS.ProcessEnv }, (e, stdout, stderr) =>
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr }),
    );
  });
/** The runs the store holds for a session (a message sent starts one). */
const runsOf = async (sessionKey: string) => (await s.rt.store.db.selectFrom('runs').select('id').where('session_key', '=', sessionKey).execute()).length;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

describe('crosstalk options', () => {
  it('send --timeout abc is refused before the message is sent (before: sent and answered, then exit 2)', async () => {
    for (const t of ['abc', '0', '-1', '']) {
      const r = await cli(['send', '--session', 'agent:main:cli-timeout', `--timeout=${t}`, '/reply should not be sent']);
      expect(r.code, `--timeout ${t}`).toBe(2);
      expect(r.stderr.trim()).toBe('crosstalk: --timeout must be a positive number of seconds');
    }
    expect(await runsOf('agent:main:cli-timeout')).toBe(0);
    const ok = await cli(['send', '--session', 'agent:main:cli-timeout', '--timeout', '30', '/reply fine']);
    expect(ok).toMatchObject({ code: 0, stdout: 'fine\n' });
    expect(await runsOf('agent:main:cli-timeout')).toBe(1);
  });

  it('--limit 0 (or not a whole number) is refused, not dropped', async () => {
    for (const l of ['0', '-3', '2.5', 'x']) {
      const r = await cli(['delegates', 'list', '--session', 'agent:main:main', `--limit=${l}`]);
      expect(r.code, `--limit ${l}`).toBe(2);
      expect(r.stderr.trim()).toBe(`crosstalk: --limit must be a whole number of at least 1, got ${JSON.stringify(l)}`);
    }
  });

  it('prints the server\'s issues of a refused request: path and message', async () => {
    const r = await cli(['delegates', 'list', '--session', 'agent:main:main', '--limit', '500']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^crosstalk: delegates\.list: .*\(invalid_request\)\n {2}limit: .+\n$/);
  });

  it('tail of an agent that does not exist exits 3, as send to it does (before: followed forever)', async () => {
    const sent = await cli(['send', '--session', 'agent:nobody:x', '/reply hi']);
    expect(sent.code).toBe(3);
    const r = await cli(['tail', '--session', 'agent:nobody:x']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/unknown agent nobody \(unknown_agent\)/);
  });

  it('an empty CROSSTALK_DATA_DIR is unset: the token is read from ./data/token (before: ./token)', async () => {
    const cwd = tmpDataDir();
    fs.mkdirSync(path.join(cwd, 'data'));
    fs.writeFileSync(path.join(cwd, 'data', 'token'), TEST_TOKEN);
    const r = await cli(['status'], { cwd, token: false, env: { CROSSTALK_DATA_DIR: '', CROSSTALK_TOKEN: '' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/active runs/);
  });
});
