// `npx tsx bench/search-pg.ts <databaseUrl> [new|old|both] [window]`: sessions.search on a seeded PostgreSQL store (bench/scale-seed-cli.ts), word by word, read-only.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../server/store/schema';
import { queryTerms, RANK_WINDOW } from '../server/store/search';
import { searchPostgres } from '../server/store/search-pg';
import { word } from './lib/zipf-words';

/*
 * `old`: the single statement sessions.search ran before (the newest RANK_WINDOW matches by `ORDER BY message_id DESC
 * LIMIT`, ranked, joined to messages). `new`: searchMessages (id-range steps, server/store/search-pg.ts). With `both`
 * each word runs new first, then old, so the new query never profits from pages the old one read. Words by Zipf rank
 * as bench/scale.ts draws them: common (rank < 50), middling (200–1,000), rare (≥ 1,500), and its two-word queries.
 */
const url = process.argv[2];
const mode = process.argv[3] ?? 'both';
if (!url) throw new Error('usage: bench/search-pg.ts <databaseUrl> [new|old|both]');
const pool = new pg.Pool({ connectionString: url, max: 1, options: '-c default_transaction_read_only=on -c statement_timeout=60000' });
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
const ranks = { common: [0, 3, 30], middling: [200, 500, 900], rare: [1500, 2000, 4500] } as const;
const queries: Array<{ label: string; query: string }> = [];
for (const [kind, rs] of Object.entries(ranks)) for (const r of rs) queries.push({ label: `${kind} ${word(r)}`, query: word(r) });
queries.push({ label: 'two words', query: `${word(101)} ${word(3007)}` });

async function old(query: string): Promise<number> {
  const terms = queryTerms(query);
  const tsquery = terms.map((t, i) => (i === terms.length - 1 ? `${t}:*` : t)).join(' & ');
  const res = await sql`
    WITH newest AS (
      SELECT s.message_id, s.body, s.tsv, q FROM message_search s, to_tsquery('simple', ${tsquery}) q
      WHERE s.tsv @@ q ORDER BY s.message_id DESC LIMIT ${RANK_WINDOW}
    ), hits AS (SELECT message_id, body, ts_rank(tsv, q) AS score, q FROM newest)
    SELECT m.id, m.session_key, m.role, m.kind, m.created_at,
           ts_headline('simple', h.body, h.q, 'StartSel="",StopSel="",MaxWords=16,MinWords=6,ShortWord=0') AS snippet
    FROM hits h JOIN messages m ON m.id = h.message_id ORDER BY h.score DESC, m.id DESC LIMIT 21`.execute(db);
  return res.rows.length;
}
// `new` ranks among the newest `window` matches (argv[4], default RANK_WINDOW as sessions.search does).
const window = Number(process.argv[4] ?? RANK_WINDOW);
const fresh = async (query: string) => (await searchPostgres(db, { terms: queryTerms(query), limit: 21, offset: 0, window, snippetWords: 16 })).length;

const stats = await sql<{ e: string; f: number }>`SELECT u.e, u.f FROM pg_stats,
  unnest(most_common_elems::text::text[], most_common_elem_freqs) AS u(e, f) WHERE tablename = 'message_search' AND attname = 'tsv'`.execute(db);
const freq = new Map(stats.rows.map((r) => [r.e, r.f]));
const times: Record<string, number[]> = { new: [], old: [] };
for (const q of queries) {
  const line: string[] = [q.label.padEnd(28), `freq ${freq.has(q.query) ? `${(freq.get(q.query)! * 100).toFixed(2)} %` : '< min'}`];
  for (const m of mode === 'both' ? ['new', 'old'] : [mode]) {
    const t0 = performance.now();
    const n = await (m === 'old' ? old : fresh)(q.query);
    const ms = performance.now() - t0;
    times[m]!.push(ms);
    line.push(`${m} ${ms.toFixed(0)} ms (${n} hits)`);
  }
  console.log(line.join('  '));
}
for (const [m, ts] of Object.entries(times)) if (ts.length) console.log(`${m}: p50 ${ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)]!.toFixed(0)} ms, max ${ts.at(-1)!.toFixed(0)} ms`);
await db.destroy();
