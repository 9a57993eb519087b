// The official MCP conformance suite (@modelcontextprotocol/conformance) against crosstalk's own MCP server (CONTRACT §10).
// Its client sends no credentials, so a loopback proxy in front adds the bearer token and passes everything else as sent
// (the Host and Origin headers included: the DNS-rebinding scenario checks those).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TEST_TOKEN, type TestServer } from '../testing/harness';

const run = promisify(execFile);
const CLI = path.resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');

/**
 * The server scenarios that apply to a tools-only server. The rest test fixture tools, resources, prompts, logging and
 * completions that only the suite's reference server has (`test_simple_text`, `json_schema_2020_12_tool`, …).
 */
export const SERVER_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-polling', 'server-sse-multiple-streams'];

let s: TestServer;
let proxy: http.Server;
let url: string;

beforeAll(async () => {
  s = await startTestServer();
  const target = new URL(s.url);
  proxy = http.createServer((req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, authorization: `Bearer ${TEST_TOKEN}` } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  url = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((r) => proxy?.close(r));
  await s?.close();
});

describe('the official MCP conformance suite, server side', () => {
  it.each(SERVER_SCENARIOS)('%s passes with no failed check', async (scenario) => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));
    const out = await run(process.execPath, [CLI, 'server', '--url', url, '--scenario', scenario], { cwd, timeout: 60_000 }).then(
      (r) => r.stdout + r.stderr,
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    const m = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(out);
    expect(m, out).not.toBeNull();
    expect(Number(m![3]), out).toBe(0);
    expect(Number(m![1]), out).toBe(Number(m![2]));
  });
});
