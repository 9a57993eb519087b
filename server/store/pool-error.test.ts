// PostgreSQL: a pool connection that drops while idle (a server restart, a failover, pg_terminate_backend) is logged, not fatal; the next query reconnects.
import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import { openDatabase, pgConnectConfig, pgIdleTxMs } from './db';
import { tmpDataDir } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function killedUnder(held: boolean) {
  const schema = `t_pool_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'testing', 'pool-child.ts')], {
    env: { ...process.env, TEST_DATABASE_URL: PG_URL, CROSSTALK_DATA_DIR: tmpDataDir(), CROSSTALK_TEST_PG_SCHEMA: schema, POOL_CHILD_HELD: held ? '1' : '0' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (err += b));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const admin = new pg.Client(pgConnectConfig(PG_URL));
  await admin.connect();
  try {
    const until = async (what: RegExp) => {
      for (let i = 0; i < 3000 && !what.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
      return what.exec(out);
    };
    const pid = Number((await until(/pid (\d+)/))?.[1]);
    expect(pid, err).toBeGreaterThan(0);
    // The server ends the idle connection: the pool's client errors while nobody is querying.
    await admin.query('select pg_terminate_backend($1)', [pid]);
    if (held) {
      // Nothing reports it (no query is running on it): give the drop time to reach the process, which must live on.
      await new Promise((r) => setTimeout(r, 1000));
      expect(child.exitCode, `stderr: ${err}`).toBe(null);
    } else {
      for (let i = 0; i < 3000 && !/connection lost/.test(err) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
      expect(err).toMatch(/PostgreSQL connection lost .*the pool reconnects on the next query/);
    }
    child.stdin.write('go\n');
    if (held) expect(await until(/transaction: failed/), `stdout: ${out}\nstderr: ${err}`).toBeTruthy();
    expect(await until(/answer (\d+)/), `stdout: ${out}\nstderr: ${err}`).toBeTruthy();
    expect(await exited).toBe(0);
  } finally {
    child.kill();
    await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    await admin.end();
  }
}

it("an idle pool connection killed by the server emits the pool's 'error': the process logs it, lives on and its next query works", () => killedUnder(false));

it('a connection checked out of the pool (a transaction between two statements) killed by the server: the process lives on, the transaction fails, the next query works', () => killedUnder(true));

it('a transaction left idle (its process stopped mid-transaction) is ended by PostgreSQL: its row locks do not hold the others for the whole stop', async () => {
  expect(pgIdleTxMs({})).toBe(15_000);
  expect(pgIdleTxMs({ CROSSTALK_DEAD_AFTER_MS: '4000' })).toBe(10_000);
  expect(pgIdleTxMs({ CROSSTALK_DEAD_AFTER_MS: '60000' })).toBe(60_000);
  expect(pgIdleTxMs({ CROSSTALK_DEAD_AFTER_MS: '4000', CROSSTALK_PG_IDLE_TX_MS: '800' })).toBe(800);
  const schema = `t_idle_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const before = process.env.CROSSTALK_PG_IDLE_TX_MS;
  process.env.CROSSTALK_PG_IDLE_TX_MS = '400';
  const handle = await openDatabase({ databaseUrl: PG_URL, pgSchema: schema, dataDir: tmpDataDir() }).finally(() => {
    if (before === undefined) delete process.env.CROSSTALK_PG_IDLE_TX_MS;
    else process.env.CROSSTALK_PG_IDLE_TX_MS = before;
  });
  const pool = handle.pg!.pool;
  const stopped = await pool.connect();
  try {
    await pool.query(`insert into sessions (key, agent_id, kind, created_at, last_activity_at) values ('agent:main:idle-tx', 'main', 'main', now()::text, now()::text)`);
    // The stopped process: it took the session row's lock, then nothing more.
    await stopped.query('begin');
    await stopped.query(`select key from sessions where key = 'agent:main:idle-tx' for update`);
    // Another process updates that row: before, it waited as long as the lock was held (here: for ever).
    const t0 = Date.now();
    await pool.query(`update sessions set label = 'taken over' where key = 'agent:main:idle-tx'`);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await pool.query(`select label from sessions where key = 'agent:main:idle-tx'`)).rows[0].label).toBe('taken over');
    // When the stopped one goes on, its transaction is gone.
    await expect(stopped.query('commit')).rejects.toThrow();
  } finally {
    stopped.release(true);
    await pool.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    await handle.close();
  }
}, 30_000);
