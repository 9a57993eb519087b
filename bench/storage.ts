// Storage a turn costs (issue 20 item 10, issue 24 item 7): N scripted turns (`agent` with an idempotency key, a reply
// streamed as 10 text deltas, then `agent.wait`) on SQLite and on PostgreSQL, twice in a row, and the bytes each table
// grew by per turn in each round (how it grows). Figures only; prints Markdown tables.
//   npx tsx bench/storage.ts [turns]
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from '../server/testing/harness';
import { dropStoreSchemas } from '../server/testing/pg-test-db';

const TURNS = Number(process.argv[2] ?? 300);
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';

async function sqliteSizes(s: TestServer): Promise<Map<string, number>> {
  const db = s.rt.store.db;
  await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
  // dbstat: bytes in use per table and index (its pages' payload, unused space excluded).
  const rows = await sql<{ name: string; tbl: string; bytes: number }>`
    select s.name, coalesce(m.tbl_name, s.name) as tbl, sum(s.pgsize - s.unused) as bytes
    from dbstat s left join sqlite_master m on m.name = s.name group by s.name`.execute(db);
  const out = new Map<string, number>();
  for (const r of rows.rows) out.set(r.tbl, (out.get(r.tbl) ?? 0) + Number(r.bytes));
  return out;
}

async function pgSizes(s: TestServer, schema: string): Promise<Map<string, number>> {
  const db = s.rt.store.db;
  const tables = await sql<{ relname: string }>`select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and c.relkind = 'r'`.execute(db);
  // VACUUM FULL: the live rows' bytes (tables, their indexes and TOAST), not the dead versions updates leave behind.
  for (const t of tables.rows) await sql`vacuum full ${sql.id(schema, t.relname)}`.execute(db);
  const out = new Map<string, number>();
  for (const t of tables.rows) {
    const r = await sql<{ n: string }>`select pg_total_relation_size(${`${schema}.${t.relname}`}::regclass)::text as n`.execute(db);
    out.set(t.relname, Number(r.rows[0]!.n));
  }
  return out;
}

async function measure(label: string, s: TestServer, sizes: () => Promise<Map<string, number>>) {
  // Warm up: sessions exist, the first pages of every table are allocated.
  const sessions = Array.from({ length: 10 }, (_, i) => `agent:main:storage-${i}`);
  for (const k of sessions) await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: k, message: 'warm up' })).runId });
  // Ten words: the scripted model streams them as ten text deltas (server/models/scripted.ts splitIntoDeltas).
  const round = async (from: number) => {
    for (let i = from; i < from + TURNS; i++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: sessions[i % sessions.length], message: `/reply answer number ${i} to the question that was asked today`, idempotencyKey: crypto.randomUUID() });
      await s.rpc('agent.wait', { runId });
    }
  };
  // The ended runs' text deltas are folded just after each end (server/store/event-fold.ts): measure once they are.
  const settled = async () => (await s.rt.store.foldsSettled(), sizes());
  const start = await settled();
  await round(0);
  const mid = await settled();
  await round(TURNS);
  const end = await settled();
  const first = report(`${label}, turns 1–${TURNS}`, start, mid);
  const second = report(`${label}, turns ${TURNS + 1}–${2 * TURNS}`, mid, end);
  return { first, second };
}

function report(label: string, before: Map<string, number>, after: Map<string, number>) {
  const rows = [...after.keys()]
    .map((t) => [t, ((after.get(t) ?? 0) - (before.get(t) ?? 0)) / TURNS] as const)
    .filter(([, b]) => b > 0.5)
    .sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((n, [, b]) => n + b, 0);
  console.log(`\n${label}: ${TURNS} turns, ${Math.round(total)} bytes per turn`);
  for (const [t, b] of rows) console.log(`| ${t} | ${Math.round(b)} |`);
  return total;
}

const lite = await startTestServer();
try {
  await measure('SQLite', lite, () => sqliteSizes(lite));
} finally {
  await lite.close();
}
const schema = `bench_storage_${crypto.randomBytes(4).toString('hex')}`;
const pgs = await startTestServer({ databaseUrl: PG_URL, pgSchema: schema });
try {
  await measure('PostgreSQL', pgs, () => pgSizes(pgs, schema));
} finally {
  await pgs.close();
  // The store's schema and pg-boss's beside it (`<schema>_pgboss`), dropped once the runtime has let go of them.
  await dropStoreSchemas(PG_URL, schema);
}
