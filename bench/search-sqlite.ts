// `npx tsx bench/search-sqlite.ts <dataDir> [old|new] [label regex]`: sessions.search on a seeded SQLite store (bench/scale-seed-cli.ts), word by word, with the event loop's longest gap.
import path from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../server/store/db';
import { queryTerms, RANK_WINDOW, searchMessages } from '../server/store/search';
import { word } from './lib/zipf-words';

/*
 * `old`: the statements sessions.search ran before the worker (an FTS5 prefix MATCH, the rank-window floor, bm25()),
 * in this thread as they ran then. `new`: searchMessages through the store's search worker (opening the store runs
 * 0021_search_terms first when the store predates it, timed). Words by Zipf rank: common, middling, rare; each whole
 * (the last word is still a prefix) and cut to a prefix of 4 and 2 letters.
 */
const dataDir = process.argv[2];
const mode = process.argv[3] === 'old' ? 'old' : 'new';
// Optional: only the queries whose label matches this (the old statements take minutes on a big store).
const only = process.argv[4] ? new RegExp(process.argv[4]) : undefined;
if (!dataDir) throw new Error('usage: bench/search-sqlite.ts <dataDir> [old|new]');
const ranks = { common: [0, 3], middling: [60, 400], rare: [2000, 4500] } as const;
const queries: Array<{ label: string; query: string }> = [];
for (const [kind, rs] of Object.entries(ranks)) for (const r of rs) queries.push({ label: `${kind} ${word(r)}`, query: word(r) });
queries.push(
  { label: 'common prefix, 4 letters (100 words)', query: word(0).slice(0, 4) },
  { label: 'common prefix, 2 letters (1,000 words)', query: word(0).slice(0, 2) },
  { label: 'middling prefix, 6 letters (10 words)', query: word(60).slice(0, 6) },
  { label: 'rare prefix, 4 letters (100 words)', query: word(2000).slice(0, 4) },
);
queries.push({ label: 'two words, common + middling prefix', query: `${word(0)} ${word(60).slice(0, 5)}` });
queries.push({ label: 'two words, rare + common', query: `${word(2000)} ${word(0)}` });

// The event loop's longest gap: a 5 ms interval timer's largest lateness while a search runs.
let last = performance.now();
let gap = 0;
const ticker = setInterval(() => {
  const now = performance.now();
  gap = Math.max(gap, now - last - 5);
  last = now;
}, 5);
const times: number[] = [];
let run: (q: string) => Promise<number>;
let close = async () => {};
if (mode === 'old') {
  const db = new Database(path.join(dataDir, 'crosstalk.sqlite'), { readonly: true });
  const floor = db.prepare('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?');
  const ranked = db.prepare(`SELECT m.id, m.session_key, m.role, m.kind, m.created_at, snippet(messages_fts, 0, '', '', '…', 16) AS snippet
    FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid WHERE messages_fts MATCH ? AND messages_fts.rowid >= ?
    ORDER BY messages_fts.rank, m.id DESC LIMIT 21 OFFSET 0`);
  run = async (query) => {
    await new Promise((r) => setTimeout(r, 1));
    const terms = queryTerms(query);
    const match = terms.map((t, i) => `"${t}"${i === terms.length - 1 ? '*' : ''}`).join(' ');
    const f = floor.get(match, RANK_WINDOW - 1) as { rowid: number } | undefined;
    return ranked.all(match, f ? BigInt(f.rowid) : 0n).length;
  };
  close = async () => {
    db.close();
  };
} else {
  const t0 = performance.now();
  const h = await openDatabase({ dataDir });
  console.log(`open (migrations) ${(performance.now() - t0).toFixed(0)} ms`);
  run = async (query) => (await searchMessages(h.db, 'sqlite', { query, limit: 21, offset: 0 }, h.sqliteSearch)).length;
  close = () => h.close();
  await run('warm'); // the worker's start
}
for (const q of queries.filter((x) => !only || only.test(x.label))) {
  await new Promise((r) => setTimeout(r, 20));
  gap = 0;
  last = performance.now();
  const t = performance.now();
  const n = await run(q.query);
  const ms = performance.now() - t;
  await new Promise((r) => setTimeout(r, 10));
  times.push(ms);
  console.log(`${mode} | ${q.label.padEnd(42)} | "${q.query}" | ${ms.toFixed(0).padStart(6)} ms | ${n} hits | event loop's longest gap ${gap.toFixed(0)} ms`);
}
clearInterval(ticker);
const sorted = [...times].sort((a, b) => a - b);
console.log(`${mode}: p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms over ${times.length} queries`);
await close();
