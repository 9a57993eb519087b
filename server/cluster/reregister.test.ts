// A process declared dead registers again under a fresh identity, even when PostgreSQL refuses its first attempts
// (a restart under way): it must never serve on with no liveness connection under the identity the others swept, nor
// claim a free session under it (nor take one with a message it accepts meanwhile).
import crypto from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster, LIVENESS } from './cluster';
import { openDatabase, pgConnectConfig } from '../store/db';
import { createLogger } from '../logger';
import { startTestServer, tmpDataDir, until } from '../testing/harness';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A Cluster on a schema of its own whose timers never fire here (the test drives its heartbeat), and how many times it was fenced. */
async function quietCluster() {
  const schema = `t_rereg_${crypto.randomBytes(4).toString('hex')}`;
  const handle = await openDatabase({ dataDir: tmpDataDir(), databaseUrl: PG_URL, pgSchema: schema });
  cleanups.push(async () => {
    await sql.raw(`drop schema if exists ${schema} cascade`).execute(handle.db).catch(() => undefined);
    await handle.close();
  });
  const was = { ...LIVENESS };
  Object.assign(LIVENESS, { heartbeatMs: 60_000, sweepMs: 60_000 });
  cleanups.push(() => Object.assign(LIVENESS, was));
  const cluster = new Cluster(handle.db, handle.pg!, createLogger('silent'));
  const fenced = { n: 0 };
  await cluster.start({ onControl: () => undefined, onEvents: () => undefined, onOrphans: () => undefined, onFenced: () => fenced.n++ });
  cleanups.push(() => cluster.stop());
  return { handle, cluster, fenced };
}

describe('re-registration after being declared dead', () => {
  it('keeps trying while PostgreSQL refuses new connections, and is registered (alive, a new id) once it accepts them', async () => {
    const admin = new pg.Client(pgConnectConfig(PG_URL));
    await admin.connect();
    cleanups.push(() => admin.end());
    // A role of its own, so new connections can be refused to this process and to no one else.
    const role = `ct_rereg_${crypto.randomBytes(4).toString('hex')}`;
    const schema = `t_rereg_${crypto.randomBytes(4).toString('hex')}`;
    await admin.query(`create role ${role} login superuser`);
    cleanups.push(async () => {
      await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role]).catch(() => undefined);
      await admin.query(`drop role if exists ${role}`).catch(() => undefined);
    });
    const url = new URL(PG_URL);
    url.username = role;
    const handle = await openDatabase({ dataDir: tmpDataDir(), databaseUrl: url.toString(), pgSchema: schema });
    cleanups.push(() => handle.close());
    const was = { ...LIVENESS };
    Object.assign(LIVENESS, { heartbeatMs: 100, sweepMs: 100 });
    cleanups.push(() => Object.assign(LIVENESS, was));
    const warnings: string[] = [];
    const log = createLogger('silent');
    const logWarn = log.warn.bind(log);
    log.warn = ((o: unknown, msg?: string) => (warnings.push(typeof o === 'string' ? o : (msg ?? '')), logWarn(o as object, msg))) as typeof log.warn;
    const cluster = new Cluster(handle.db, handle.pg!, log);
    let fenced = 0;
    await cluster.start({ onControl: () => undefined, onEvents: () => undefined, onOrphans: () => undefined, onFenced: () => fenced++ });
    cleanups.push(() => cluster.stop());
    const first = cluster.id;

    // PostgreSQL refuses this process's new connections (its pooled ones go on: a few are opened first, so the
    // heartbeat and the sweep find one idle); the others declare it dead.
    await Promise.all(Array.from({ length: 6 }, () => sql`select pg_sleep(0.05)`.execute(handle.db)));
    await admin.query(`alter role ${role} nologin`);
    await admin.query(`update ${schema}.processes set status = 'dead' where id = $1`, [first]);
    await until(() => fenced > 0 && warnings.some((w) => /could not register again|heartbeat failed/.test(w)), 20_000);
    expect(cluster.id).toBe(first); // not registered yet: no new identity was taken

    await admin.query(`alter role ${role} login`);
    // The new id is taken once its row is written (a read of the table can see the row a moment before): wait for
    // the id, then the one alive row is its own.
    await until(() => cluster.id !== first, 20_000);
    const alive = await admin.query(`select id, pid from ${schema}.processes where status = 'alive'`);
    expect(alive.rows).toEqual([{ id: cluster.id, pid: process.pid }]);
    expect(fenced).toBe(1);
  }, 60_000);
  it('two heartbeats at once that both find its identity declared dead drop its work once and register one new identity', async () => {
    // On a loaded machine a heartbeat outlasted the next tick: both found the old identity dead, and the second dropped
    // the work the new identity had just claimed (fencing.test saw a re-driven run aborted and driven a third time).
    const { handle, cluster, fenced } = await quietCluster(); // only the two heartbeats below
    const first = cluster.id;
    await sql`update processes set status = 'dead' where id = ${first}`.execute(handle.db);
    const beat = () => (cluster as unknown as { heartbeat(): Promise<void> }).heartbeat();
    await Promise.all([beat(), beat()]);
    await until(() => cluster.id !== first, 20_000);
    const rows = await sql<{ id: string; status: string }>`select id, status from processes order by started_at`.execute(handle.db);
    expect(rows.rows).toEqual([
      { id: first, status: 'dead' },
      { id: cluster.id, status: 'alive' },
    ]);
    expect(fenced.n).toBe(1);
  }, 60_000);
  it('claims no free session under the identity it was declared dead under; under its new one it does', async () => {
    // Between a heartbeat that finds the identity dead and the new registration, the process's own orphan sweep
    // claimed the session the others had freed under the dead identity; the next sweep freed it again, and the run it
    // had re-driven was aborted and driven a third time (fencing.test's third model request).
    const { handle, cluster } = await quietCluster(); // no heartbeat learns of the death here
    const now = new Date().toISOString();
    await sql`insert into sessions (key, agent_id, kind, created_at, last_activity_at) values ('agent:main:freed', 'main', 'main', ${now}, ${now})`.execute(handle.db);
    const first = cluster.id;
    await sql`update processes set status = 'dead' where id = ${first}`.execute(handle.db);
    expect(await cluster.claim('agent:main:freed')).toBeNull();
    const owner = async () => (await sql<{ owner: string | null }>`select owner from sessions where key = 'agent:main:freed'`.execute(handle.db)).rows[0]!.owner;
    expect(await owner()).toBeNull();
    // Registered again (as its heartbeat would), it claims the session under the new identity.
    await (cluster as unknown as { register(): Promise<void> }).register();
    expect(cluster.id).not.toBe(first);
    expect(await cluster.claim('agent:main:freed')).toEqual(expect.any(Number));
    expect(await owner()).toBe(cluster.id);
  }, 60_000);
  it('a message it accepts before it learns it was declared dead is queued, not started under the dead identity; it runs once the process is registered again', async () => {
    // A SIGCONTed process answers the requests waiting in its sockets before its heartbeat runs: their enqueue took a
    // free session under the dead identity and started the run, which the others' sweep then freed and fenced, and
    // which was driven again (its model asked twice).
    const was = { ...LIVENESS };
    Object.assign(LIVENESS, { heartbeatMs: 60_000, sweepMs: 60_000 }); // it learns of its death only when told below
    const schema = `t_rereg_${crypto.randomBytes(4).toString('hex')}`;
    const s = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema, config: { agents: [{ id: 'main' }] } }).finally(() => Object.assign(LIVENESS, was));
    cleanups.push(async () => {
      await s.close();
      const admin = new pg.Client(pgConnectConfig(PG_URL));
      await admin.connect();
      await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
      await admin.end();
    });
    const cluster = s.rt.cluster!;
    const first = cluster.id;
    await sql`update processes set status = 'dead' where id = ${first}`.execute(s.rt.store.db);
    const key = 'agent:main:zombie-accept';
    const r = await s.rpc<{ runId: string; status: string }>('agent', { sessionKey: key, message: 'hello' });
    expect(r.status).toBe('queued');
    const rows = async () => ({
      owner: (await sql<{ owner: string | null }>`select owner from sessions where key = ${key}`.execute(s.rt.store.db)).rows[0]?.owner,
      status: (await sql<{ status: string }>`select status from runs where id = ${r.runId}`.execute(s.rt.store.db)).rows[0]?.status,
    });
    expect(await rows()).toEqual({ owner: null, status: 'queued' });
    // Its heartbeat finds it dead: it registers again and takes the free session in under its new identity.
    await (cluster as unknown as { heartbeat(): Promise<void> }).heartbeat();
    await until(() => cluster.id !== first, 20_000);
    expect(await s.rpc('agent.wait', { runId: r.runId, timeoutMs: 20_000 })).toMatchObject({ status: 'ok', response: 'echo: hello' });
    expect(await rows()).toMatchObject({ status: 'ok' });
  }, 60_000);
});
