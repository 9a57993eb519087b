// next.config.mjs loads from any working directory (as `npm start` and the `crosstalk` bin run it), without SWC, and frames every response.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NextConfig } from 'next';
import { FRAME_HEADERS } from './headers';

const root = path.resolve(__dirname, '..', '..');

describe('next.config.mjs', () => {
  it("loads through Next's own config loader when the process runs in another directory", () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-nextcfg-'));
    try {
      const script = `const r = require('node:module').createRequire(${JSON.stringify(path.join(root, 'package.json'))});
r('next/dist/server/config').default('phase-production-server', ${JSON.stringify(root)}).then(
  (c) => { console.log(JSON.stringify({ poweredByHeader: c.poweredByHeader, swcMapped: require('node:fs').readFileSync('/proc/self/maps', 'utf8').includes('next-swc') })); process.exit(0); },
  (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });`;
      const r = spawnSync(process.execPath, ['-e', script], { cwd, encoding: 'utf8', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' }, timeout: 120_000 });
      const last = r.stdout.trim().split('\n').at(-1) ?? '';
      // swcMapped: a TypeScript config is compiled by SWC, whose native binding then stays mapped in the production
      // server (24 MB of RSS after the load, a tokio thread; issue 24.5).
      expect(JSON.parse(last)).toEqual({ poweredByHeader: false, swcMapped: false });
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  }, 150_000);

  it('sends the framing ban of lib/security/headers.ts on every path', async () => {
    const nextConfig = ((await import(path.join(root, 'next.config.mjs'))) as { default: NextConfig }).default;
    const rules = await nextConfig.headers!();
    expect(rules).toEqual([{ source: '/:path*', headers: Object.entries(FRAME_HEADERS).map(([key, value]) => ({ key, value })) }]);
  });
});
