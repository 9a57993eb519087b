// `npx tsx bench/sse-paused.ts`: RSS of a gateway process while three SSE clients stop reading and ~30 MB of events go by (issue 12 item 6).
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRuntime } from '../server/boot';
import { parseRawConfig, resolveConfig } from '../server/config';
import { createLogger } from '../server/logger';
import { serve } from '../server/http/node-server';

const TOKEN = 'bench-token';
const RUNS = Number(process.env.RUNS ?? 40);
const CLIENTS = 3;
/** READING=1: the same clients, reading as fast as they can (the baseline). */
const READING = process.env.READING === '1';

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-bench-sse-'));
  const config = resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: dataDir, CROSSTALK_TOKEN: TOKEN, CROSSTALK_WORKSPACES: `${dataDir}-ws` });
  const rt = await createRuntime({ config, log: createLogger('silent') });
  const srv = await serve(rt);
  const port = Number(new URL(srv.url).port);
  const key = 'agent:main:bench-paused';
  const socks = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const sock = net.connect(port, '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      if (READING) sock.on('data', () => undefined);
      else sock.pause();
      sock.write(`GET /api/gateway/events?sessionKey=${key} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      return sock;
    }),
  );
  const mb = (n: number) => Math.round(n / 1024 / 1024);
  global.gc?.();
  const before = process.memoryUsage().rss;
  const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().external;
  let peak = before;
  const big = 'x'.repeat(240 * 1024);
  for (let i = 0; i < RUNS; i++) {
    const { runId } = await rt.gateway.agent({ sessionKey: key, message: `${i}${big}` });
    await rt.gateway.agentWait({ runId, timeoutMs: 60_000 });
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  await rt.bus.drain();
  global.gc?.();
  const after = process.memoryUsage().rss;
  const heapAfter = process.memoryUsage().heapUsed + process.memoryUsage().external;
  const sent = RUNS * 3 * 240 * 1024 * CLIENTS;
  console.log(JSON.stringify({ clients: CLIENTS, reading: READING, heapGrowthMB: mb(heapAfter - heapBefore), runs: RUNS, eventBytesPerClientMB: mb(sent / CLIENTS), rssBeforeMB: mb(before), rssPeakMB: mb(peak), rssAfterMB: mb(after), growthMB: mb(after - before), node: process.version }));
  for (const s of socks) s.destroy();
  await srv.close();
  await rt.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

await main();
