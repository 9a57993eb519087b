// The test run's gateway children start from the bundle the global setup built (child-bundle.ts), and it is a whole
// gateway: it answers a turn.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUNDLE_DIR, childArgs } from './child-bundle';
import { startChildServer, tmpDataDir } from './harness';

describe('the test children bundle', () => {
  it('starts child servers from this run’s bundle, which answers a turn', async () => {
    expect(process.env.CROSSTALK_TEST_BUNDLES).toBe(BUNDLE_DIR);
    expect(childArgs('child-server')).toEqual([`${BUNDLE_DIR}/child-server.mjs`]);
    expect(childArgs('mcp-conformance-client')).toEqual([`${BUNDLE_DIR}/mcp-conformance-client.mjs`]);
    const c = await startChildServer({ dataDir: tmpDataDir(), env: { DATABASE_URL: '' } });
    try {
      const cmdline = fs.readFileSync(`/proc/${c.child.pid}/cmdline`, 'utf8').split('\0');
      expect(cmdline).toContain(`${BUNDLE_DIR}/child-server.mjs`);
      expect(cmdline).not.toContain('tsx');
      const { runId } = await c.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:bundle', message: 'hello' });
      const done = await c.rpc<{ status: string; response: string }>('agent.wait', { runId, timeoutMs: 10_000 });
      expect(done).toMatchObject({ status: 'ok', response: 'echo: hello' });
    } finally {
      c.kill();
      await c.exited;
    }
  });

  it('falls back to tsx and the source without a bundle for the run', () => {
    const saved = process.env.CROSSTALK_TEST_BUNDLES;
    delete process.env.CROSSTALK_TEST_BUNDLES;
    try {
      expect(childArgs('child-server')).toEqual(['--import', 'tsx', expect.stringMatching(/server\/testing\/child-server\.ts$/)]);
      expect(childArgs('mcp-conformance-client')).toEqual([expect.stringMatching(/scripts\/mcp-conformance-client\.mjs$/)]);
    } finally {
      process.env.CROSSTALK_TEST_BUNDLES = saved;
    }
  });
});
