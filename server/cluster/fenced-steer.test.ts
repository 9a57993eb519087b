// A message steered into a run on a session whose lease this process has just lost (PostgreSQL): the fenced write
// that records the steer is refused, and that refusal must not go unhandled — in the 200-fault run it was an
// unhandled rejection (FencedError from updateRunFenced) that made a gateway process exit.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const config = { agents: [{ id: 'main' }] };

describe('a steer into a session whose lease was just lost (PostgreSQL)', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });

  it('is refused by the fence without an unhandled rejection, and the process goes on serving', async () => {
    let a: TestServer | undefined;
    try {
      a = await startTestServer({ databaseUrl: PG_URL, pgSchema: `t_fs_${crypto.randomBytes(4).toString('hex')}`, config });
      const key = 'agent:main:fenced-steer';
      const first = await a.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 4000\n/reply slept' });
      await until(async () => (await a!.rt.store.getRun(first.runId))?.status === 'running');
      // Another process took the session over (as the sweep does for a process it declared dead): a new epoch.
      await sql`update sessions set epoch = nextval('session_epochs') where key = ${key}`.execute(a.rt.store.db);
      // This process still thinks it drives the run: the steer is placed into it and its fenced write refused.
      await a.rpc('agent', { sessionKey: key, message: 'steered in', queueMode: 'steer' }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 500));
      expect(unhandled.map((e) => String(e))).toEqual([]);
      // Still serving.
      expect(await a.rpc('status', {})).toBeTruthy();
    } finally {
      await a?.crash();
    }
  }, 120_000);
});
