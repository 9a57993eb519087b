// The CLI over the real gateway: a follow-up through `crosstalk delegates resume` reuses the conversation and grows its history.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../server/testing/harness';

const run = promisify(execFile);
const CLI = path.join(import.meta.dirname, 'crosstalk.mjs');
let s: TestServer;
const cli = (...args: string[]) => run(process.execPath, [CLI, ...args, '--url', s.url, '--token', TEST_TOKEN]);

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

describe('crosstalk delegates', () => {
  it('list, messages, resume and dismiss a delegate of agent:main:main', async () => {
    const parent = 'agent:main:main';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: parent, message: '/tool delegate_agent {"agent_id":"researcher","prompt":"/reply first answer"}' });
    const w = await s.rpc<{ response: string }>('agent.wait', { runId });
    const conv = JSON.parse(w.response.replace(/^delegate_agent: /, '')).conversation_id as string;

    const list = await cli('delegates', 'list', '--session', parent);
    expect(list.stdout).toContain(conv);
    expect(list.stdout).toContain('turns=1');

    const resumed = await cli('delegates', 'resume', '--session', parent, '--conversation', conv, '--prompt', '/reply second answer');
    expect(resumed.stdout.trim()).toBe('second answer');

    const json = JSON.parse((await cli('delegates', 'list', '--session', parent, '--json')).stdout);
    expect(json.sessions).toHaveLength(1);
    expect(json.sessions[0]).toMatchObject({ conversation_id: conv, turns: 2 });

    const msgs = await cli('delegates', 'messages', '--session', parent, '--conversation', conv, '--limit', '4');
    const lines = msgs.stdout.trim().split('\n');
    expect(lines[0]).toContain('assistant/message: second answer');
    expect(lines[3]).toContain('user/inter_session: /reply first answer');

    await cli('delegates', 'dismiss', '--session', parent, '--conversation', conv);
    await expect(cli('delegates', 'messages', '--session', parent, '--conversation', conv)).rejects.toMatchObject({ stderr: expect.stringContaining('unknown_conversation') });
  });

  it('explains bad usage', async () => {
    await expect(cli('delegates', 'resume', '--session', 'agent:main:main')).rejects.toMatchObject({ stderr: expect.stringContaining('--conversation is required') });
    await expect(run(process.execPath, [CLI, 'nope'])).rejects.toMatchObject({ code: 2 });
  });
});

describe('the CLI on an old Node', () => {
  it('refuses with one line naming the version it needs (README Runtime: every entry point checks first)', async () => {
    // process.versions.node as a Node 20 would report it, before the CLI loads.
    const old = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.1.0"})';
    const r = await run(process.execPath, ['--import', old, CLI, 'status', '--url', 'http://127.0.0.1:9', '--token', 'x']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(r?.code).toBe(1);
    expect(r?.stderr).toMatch(/^crosstalk: needs Node\.js >= 22\.12/);
    expect(r?.stderr.trim().split('\n')).toHaveLength(1);
  });
});
