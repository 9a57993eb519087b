// The CLI's status, approvals, send and tail against a real gateway over loopback HTTP: output, --json and exit codes.
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, until, type TestServer } from '../server/testing/harness';

const run = promisify(execFile);
const CLI = path.join(import.meta.dirname, 'crosstalk.mjs');
let s: TestServer;
const cli = (...args: string[]) => run(process.execPath, [CLI, ...args, '--url', s.url, '--token', TEST_TOKEN]);
const exitCode = (p: Promise<unknown>) => p.then(() => 0, (e: { code?: number }) => e.code);

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

type Approval = { approvalId: string; sessionKey: string; tool: string; chain: string[] };

describe('crosstalk status', () => {
  it('prints the status figures, with --json the status result', async () => {
    const text = (await cli('status')).stdout;
    expect(text).toMatch(/active runs\s+\d+/);
    expect(text).toMatch(/reusable delegates \d+ \(.* on disk\)/);
    const json = JSON.parse((await cli('status', '--json')).stdout);
    expect(json).toMatchObject({ activeRuns: expect.any(Number), pendingApprovals: expect.any(Number), delegates: { reusable: expect.any(Number), bytes: expect.any(Number) } });
  });

  it('exits 1 when the gateway cannot be reached, 2 on bad usage', async () => {
    expect(await exitCode(run(process.execPath, [CLI, 'status', '--url', 'http://127.0.0.1:9', '--token', 'x']))).toBe(1);
    expect(await exitCode(run(process.execPath, [CLI, 'frobnicate']))).toBe(2);
    expect(await exitCode(cli('send', 'hello'))).toBe(2);
    // Not found (3): an unknown agent as much as an unknown session (it exited 1, "the request failed").
    expect(await exitCode(cli('send', '--session', 'agent:nobody:main', 'hi'))).toBe(3);
  });
});

describe('crosstalk approvals', () => {
  it("lists a grand-delegate's approval with its parent chain, allows it, and a second decision exits 3", async () => {
    const inner = JSON.stringify({ agent_id: 'writer', prompt: '/tool exec {"command":"echo from-grandchild"}' });
    const outer = JSON.stringify({ agent_id: 'researcher', prompt: `/tool delegate_agent ${inner}` });
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:cli-chain', message: `/tool delegate_agent ${outer}` });
    const pending = await until(async () => (await s.rpc<{ approvals: Approval[] }>('approvals.list', {})).approvals.find((a) => a.tool === 'exec'));

    const list = JSON.parse((await cli('approvals', 'list', '--json')).stdout) as { approvals: Approval[] };
    const a = list.approvals.find((x) => x.approvalId === pending.approvalId)!;
    expect(a.chain).toHaveLength(3);
    expect(a.chain[0]).toBe('agent:main:cli-chain');
    expect(a.chain[1]).toMatch(/^agent:researcher:subagent:/);
    expect(a.chain[2]).toBe(a.sessionKey);
    expect(a.sessionKey).toMatch(/^agent:writer:subagent:/);
    const text = (await cli('approvals', 'list')).stdout;
    expect(text).toContain(`chain   ${a.chain.join(' → ')}`);
    expect(text).toContain('trust   operator');

    expect((await cli('approvals', 'allow', a.approvalId)).stdout.trim()).toBe(`allow_once ${a.approvalId}`);
    const w = await s.rpc<{ status: string; response: string }>('agent.wait', { runId });
    expect(w.status).toBe('ok');
    expect(w.response).toContain('from-grandchild');
    expect(await exitCode(cli('approvals', 'deny', a.approvalId, '--reason', 'late'))).toBe(3);
    expect(await exitCode(cli('approvals', 'allow'))).toBe(2);
  });

  it('denies with a reason', async () => {
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:cli-deny', message: '/tool exec {"command":"echo no"}' });
    const a = await until(async () => (await s.rpc<{ approvals: Approval[] }>('approvals.list', { sessionKey: 'agent:main:cli-deny' })).approvals[0]);
    const r = JSON.parse((await cli('approvals', 'deny', a.approvalId, '--reason', 'not today', '--json')).stdout);
    expect(r).toMatchObject({ status: 'ok', decision: 'deny' });
    expect((await s.rpc<{ response: string }>('agent.wait', { runId })).response).toContain('not today');
  });
});

describe('crosstalk send and tail', () => {
  it('send waits for the reply; --detach returns the run; a failing run exits 4', async () => {
    expect((await cli('send', '--session', 'agent:main:cli-send', 'hello', 'there')).stdout.trim()).toBe('echo: hello there');
    const d = JSON.parse((await cli('send', '--session', 'agent:main:cli-send', '--detach', '--json', '/reply later')).stdout);
    expect(d).toMatchObject({ runId: expect.any(String), status: expect.stringMatching(/started|queued|steered/) });
    await s.rpc('agent.wait', { runId: d.runId });
    expect(await exitCode(cli('send', '--session', 'agent:main:cli-send', '--prompt', '/fail boom'))).toBe(4);
  });

  it('tail follows a run live, and replays from a cursor with no gap and no duplicate', async () => {
    const key = 'agent:main:cli-tail';
    const child = spawn(process.execPath, [CLI, 'tail', '--session', key, '--json', '--until-end', '--url', s.url, '--token', TEST_TOKEN]);
    let stdout = '';
    child.stdout.on('data', (b) => (stdout += b));
    const exited = new Promise<number | null>((res) => child.on('exit', (c) => res(c)));
    // The server subscribes before it answers; the CLI says so on stderr once it has the answer.
    await new Promise((r) => child.stderr.once('data', r));
    await s.rpc('agent', { sessionKey: key, message: '/reply streamed words' });
    expect(await exited).toBe(0);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { cursor: string; event: { stream: string; seq: number; data: { phase?: string; delta?: string } } });
    expect(lines[0]!.event).toMatchObject({ stream: 'lifecycle', data: { phase: 'start' } });
    expect(lines.at(-1)!.event).toMatchObject({ stream: 'lifecycle', data: { phase: 'end' } });
    expect(lines.filter((l) => l.event.stream === 'assistant').map((l) => l.event.data.delta).join('')).toContain('streamed words');

    // Replay from the third event: exactly the events after it.
    const from = lines[2]!.cursor;
    const replay = (await cli('tail', '--session', key, '--cursor', from, '--json', '--until-end')).stdout.trim().split('\n').map((l) => JSON.parse(l) as { cursor: string });
    expect(replay.map((l) => l.cursor)).toEqual(lines.slice(3).map((l) => l.cursor));

    const text = (await cli('tail', '--session', key, '--cursor', from, '--until-end')).stdout;
    expect(text).toMatch(/lifecycle {2}end/);
    expect(await exitCode(cli('tail', '--session', key, '--cursor', 'not-a-cursor'))).toBe(2);
  });
});
