// A SQLite start loads none of the heavy modules the first request does not need (issue 24.5): channel SDKs, pg and
// pg-boss, the OpenTelemetry SDK, the MCP and A2A SDKs, tRPC, the AI SDK's model providers. A fresh process boots the
// runtime with a resolve hook that records every module it loads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '..');

/** Boots a runtime (SQLite, default config) in a child process; the packages it loaded, as `name` or `@scope/name`. */
function packagesLoadedAtBoot(config: object = {}): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-bootlazy-'));
  try {
    fs.writeFileSync(
      path.join(dir, 'record.mjs'),
      `import { registerHooks } from 'node:module';
globalThis.__loaded = new Set();
registerHooks({ resolve(s, c, next) { const r = next(s, c); globalThis.__loaded.add(r.url); return r; } });\n`,
    );
    fs.writeFileSync(
      path.join(dir, 'boot.mts'),
      `import { createRuntime } from ${JSON.stringify(path.join(root, 'server/boot.ts'))};
import { parseRawConfig, resolveConfig } from ${JSON.stringify(path.join(root, 'server/config.ts'))};
import { createLogger } from ${JSON.stringify(path.join(root, 'server/logger.ts'))};
const rt = await createRuntime({ config: resolveConfig(parseRawConfig(${JSON.stringify(config)}), { CROSSTALK_DATA_DIR: ${JSON.stringify(path.join(dir, 'data'))} }), log: createLogger('silent') });
const names = new Set();
for (const u of globalThis.__loaded) {
  const i = u.lastIndexOf('/node_modules/');
  if (i < 0) continue;
  const parts = u.slice(i + 14).split('/');
  names.add(parts[0].startsWith('@') ? parts[0] + '/' + parts[1] : parts[0]);
}
console.log(JSON.stringify([...names]));
await rt.close();
process.exit(0);\n`,
    );
    const r = spawnSync(process.execPath, ['--import', path.join(dir, 'record.mjs'), '--import', 'tsx', path.join(dir, 'boot.mts')], { cwd: root, encoding: 'utf8', timeout: 120_000, env: { ...process.env, DATABASE_URL: '' } });
    const last = r.stdout.trim().split('\n').at(-1) ?? '';
    if (!last.startsWith('[')) throw new Error(`boot failed: ${r.stderr.slice(-2000)}`);
    return JSON.parse(last) as string[];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('start loads only what the first request needs', () => {
  it('a SQLite runtime boots without the channel SDKs, pg, pg-boss, OpenTelemetry SDK, MCP and A2A SDKs, tRPC or the model providers', () => {
    const loaded = packagesLoadedAtBoot();
    expect(loaded).toContain('better-sqlite3'); // the hook saw the store's driver: the list is real
    const heavy = ['grammy', '@slack/web-api', '@discordjs/rest', 'ws', '@noble/curves', 'pg', 'pg-boss', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@modelcontextprotocol/sdk', '@a2a-js/sdk', '@trpc/server', '@ai-sdk/openai', '@ai-sdk/anthropic', '@ai-sdk/openai-compatible'];
    expect(loaded.filter((p) => heavy.includes(p))).toEqual([]);
  }, 150_000);
});
