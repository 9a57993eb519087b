// The official MCP conformance suite (@modelcontextprotocol/conformance), client side: its scenario servers against
// crosstalk's own MCP client, driven by scripts/mcp-conformance-client.mjs through the real run loop and tool policy.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { childArgs } from '../testing/child-bundle';

const run = promisify(execFile);
const CLI = path.resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');

/** The client scenarios crosstalk passes: every one the suite lists for 2025-06-18 and 2025-11-25, OAuth (`auth/*`) included. */
export const CLIENT_SCENARIOS = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/basic-cimd',
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  'auth/pre-registration',
];
const SPEC_VERSIONS = ['2025-06-18', '2025-11-25'];

/** The suite's client scenarios with the spec versions each is labelled with (`conformance list`). */
const listed: Array<[string, string[]]> = await (async () => {
  const { stdout } = await run(process.execPath, [CLI, 'list']);
  const client = stdout.slice(stdout.indexOf('Client scenarios'));
  return [...client.matchAll(/^\s*- (\S+) \[([^\]]*)\]/gm)].map((m) => [m[1]!, m[2]!.split(',')] as [string, string[]]);
})();

const cases: Array<[string, string]> = SPEC_VERSIONS.flatMap((v) => CLIENT_SCENARIOS.filter((s) => listed.find(([n]) => n === s)?.[1].includes(v)).map((s): [string, string] => [v, s]));

// Two scenarios at a time: each is mostly two processes starting (the suite's CLI, the harness booting a runtime) and
// waiting on each other over loopback, which leaves a core idle when run one by one.
vi.setConfig({ maxConcurrency: 2 });

describe('the official MCP conformance suite, client side', () => {
  it('covers every scenario the suite lists for both spec versions', () => {
    const due = SPEC_VERSIONS.flatMap((v) => listed.filter(([, vs]) => vs.includes(v)).map(([n]) => [v, n] as const));
    expect(cases).toEqual(due);
    expect(cases).toContainEqual(['2025-06-18', 'auth/token-endpoint-auth-basic']);
    expect(cases.filter(([, s]) => s.startsWith('auth/')).length).toBe(17);
  });

  it.concurrent.for(cases)('spec %s: %s passes with no failed check', { timeout: 150_000 }, async ([version, scenario], { expect }) => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-client-'));
    // The suite runs the command through a shell; the project's Node runs the harness (this run's bundle of it).
    const command = [process.execPath, ...childArgs('mcp-conformance-client')].map((a) => JSON.stringify(a)).join(' ');
    // The harness boots a whole runtime: on a loaded machine that alone can pass the suite's 30 s default.
    const out = await run(process.execPath, [CLI, 'client', '--command', command, '--scenario', scenario, '--spec-version', version, '--timeout', '90000'], { cwd, timeout: 120_000 }).then(
      (r) => r.stdout + r.stderr,
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    const m = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(out);
    expect(m, out).not.toBeNull();
    expect(Number(m![3]), out).toBe(0);
    expect(Number(m![1]), out).toBe(Number(m![2]));
    expect(Number(m![2]), out).toBeGreaterThan(0);
    // A warning is not a failed check: sse-retry warns when the reconnect comes up to 200 ms late (a loaded machine).
  });
});
