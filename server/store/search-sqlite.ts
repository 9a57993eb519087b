// SQLite sessions.search as plain JavaScript source: run by the search worker thread (server/store/search-worker.ts), or in-thread as its fallback.
import type { Database as SqliteDatabase } from 'better-sqlite3';

// What the index holds for a message: its text, then the string/number leaves of its tool arguments and result, one per line.
const sqliteLeaves = (col: string) =>
  `coalesce((SELECT group_concat(value, char(10)) FROM json_tree(coalesce(${col}, 'null')) WHERE type IN ('text', 'integer', 'real')), '')`;
export const sqliteBody = (row: string) => `${row}.content || char(10) || ${sqliteLeaves(`${row}.tool_args`)} || char(10) || ${sqliteLeaves(`${row}.tool_result`)}`;

// The bodies of messages whose words are not yet counted into search_terms (0021_search_terms: at most a batch).
const PENDING_BODIES = `SELECT ${sqliteBody('m')} AS body FROM messages m WHERE m.id IN (SELECT id FROM search_terms_pending)`;

/*
 * Why source text: the worker is started from a string (`new Worker(src, { eval: true })`), so it runs the same under
 * Next's server bundle, tsx and vitest (no worker file for a bundler to find, no TypeScript loader in the thread).
 * Keep it self-contained plain JavaScript (no template literals: it is itself one).
 *
 * The query, bounded at any store size (BENCHMARKS.md, scale notes):
 * - the last word is a prefix, expanded through `search_terms` (0021_search_terms) into at most `maxExpansion` exact
 *   words, most common first (the typed word itself always among them), looked up among at most `scanTerms` words
 *   of that prefix. An FTS5 prefix query ("wor"*) builds the prefix's whole merged doclist, millions of rowids for a
 *   common prefix, whatever the rowid bound; an OR of exact words is walked lazily, newest first.
 * - the newest `window` matches are read with their text and ranked here, bm25 (k1 1.2, b 0.75) as FTS5 computes it
 *   but with each word's message count from `search_terms` instead of FTS5's bm25(), which counts every row holding
 *   each word first (a pass over the whole doclist). The rows holding the last word itself, whole, first (with that
 *   word's own newest window when the prefix's is full of other words), then best first, newest first among equals;
 *   then the agent filter and the page; snippets by FTS5's snippet() for the page's rows only.
 */
export const SQLITE_SEARCH_SOURCE = String.raw`
function createSqliteSearch(db) {
  const stmts = new Map();
  const prep = (text) => {
    let st = stmts.get(text);
    if (!st) stmts.set(text, (st = db.prepare(text)));
    return st;
  };
  // unicode61's folding: lower case, diacritics off.
  const fold = (s) => (/[^\x00-\x7f]/.test(s) ? s.normalize('NFD').replace(/\p{M}/gu, '') : s).toLowerCase();
  const words = (s) => fold(s).match(/[\p{L}\p{N}]+/gu) || [];
  const quote = (t) => '"' + t.replace(/"/g, '""') + '"';
  const K1 = 1.2;
  const B = 0.75;
  return function search(q) {
    const terms = q.terms.map(fold).filter((t) => t.length > 0);
    if (!terms.length) return [];
    const exact = terms.slice(0, -1);
    const last = terms[terms.length - 1];
    let completions = prep('SELECT term, n FROM (SELECT term, n FROM search_terms WHERE term >= ? AND term < ? LIMIT ?) ORDER BY n DESC, term LIMIT ?')
      .all(last, last + '\u{10FFFF}', q.scanTerms, q.maxExpansion);
    // Messages not yet counted (at most a batch): their words of this prefix, read here.
    const found = new Map(completions.map((c) => [c.term, c.n]));
    for (const p of prep(${JSON.stringify(PENDING_BODIES)}).all())
      for (const w of new Set(words(p.body))) if (w.startsWith(last)) found.set(w, (found.get(w) || 0) + 1);
    const own = found.get(last) || (prep('SELECT n FROM search_terms WHERE term = ?').get(last) || { n: 0 }).n;
    const picked = [...found].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, q.maxExpansion);
    if (own && !picked.some(([t]) => t === last)) picked.push([last, own]);
    completions = picked.map(([term, n]) => ({ term, n }));
    if (!completions.length) return [];
    const count = prep('SELECT n FROM search_terms WHERE term = ?');
    // (an exact word still waiting to be counted has n 0 here: its idf is the highest, as a rare word's is.)
    const groups = exact.map((t) => ({ words: new Set([t]), n: (count.get(t) || { n: 0 }).n }));
    groups.push({ words: new Set(completions.map((c) => c.term)), n: completions.reduce((a, c) => a + c.n, 0) });
    const match = exact.map(quote).concat(['(' + completions.map((c) => quote(c.term)).join(' OR ') + ')']).join(' AND ');
    // The window's text only: the messages rows (a lookup each, the bulk of the time) for the page's rows alone, or
    // for the window's when an agent filters it.
    // Paging: the matches of the first page's store (ids up to upTo), so rows added meanwhile shift no page.
    const newestOf = (m) =>
      q.upTo
        ? prep('SELECT rowid AS id, body FROM messages_fts WHERE messages_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?').all(m, BigInt(q.upTo), q.window)
        : prep('SELECT rowid AS id, body FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?').all(m, q.window);
    const rows = newestOf(match);
    if (!rows.length) return [];
    // The typed word itself, whole, ranks above its completions ("scalemark7" above "scalemark70"): bm25 scores the
    // completions as one word. A window full of completions may hide the word's own matches: its newest window joins.
    const toks = rows.map((r) => words(r.body));
    const exactIn = toks.map((t) => t.includes(last));
    if (own && completions.length > 1 && rows.length === q.window && exactIn.some((x) => !x)) {
      const seen = new Set(rows.map((r) => Number(r.id)));
      for (const r of newestOf(exact.map(quote).concat([quote(last)]).join(' AND ')))
        if (!seen.has(Number(r.id))) {
          rows.push(r);
          toks.push(words(r.body));
          exactIn.push(true);
        }
    }
    const total = Math.max(1, q.upTo || Number((prep('SELECT max(id) AS n FROM messages').get() || { n: 1 }).n));
    const idf = groups.map((g) => {
      const v = Math.log((total - g.n + 0.5) / (g.n + 0.5));
      return v > 0 ? v : 1e-6;
    });
    const stats = rows.map((r, i) => {
      const tf = groups.map((g) => {
        let k = 0;
        for (const t of toks[i]) if (g.words.has(t)) k++;
        return k;
      });
      return { r, tf, len: toks[i].length, whole: exactIn[i] };
    });
    const avg = stats.reduce((a, s) => a + s.len, 0) / stats.length || 1;
    let keys;
    if (q.agentPrefix) {
      keys = new Map();
      for (const k of prep('SELECT id, session_key FROM messages WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(rows.map((r) => r.id))))
        keys.set(k.id, k.session_key);
    }
    const ranked = stats
      .filter((s) => !keys || (keys.get(s.r.id) || '').startsWith(q.agentPrefix))
      .map((s) => {
        let score = 0;
        s.tf.forEach((f, i) => {
          score += (idf[i] * (f * (K1 + 1))) / (f + K1 * (1 - B + (B * s.len) / avg));
        });
        return { r: s.r, score, whole: s.whole ? 1 : 0 };
      })
      .sort((a, b) => b.whole - a.whole || b.score - a.score || Number(b.r.id) - Number(a.r.id));
    const snippet = prep("SELECT snippet(messages_fts, 0, '', '', '…', ?) AS s FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?");
    const meta = prep('SELECT id, session_key, role, kind, created_at FROM messages WHERE id = ?');
    const hits = [];
    for (const { r } of ranked.slice(q.offset, q.offset + q.limit)) {
      const m = meta.get(r.id);
      if (!m) continue;
      // A BigInt: FTS5 takes a rowid bound only from an integer value, and a JS number binds as a real (then no bound at all).
      const s = snippet.get(q.snippetWords, match, BigInt(r.id));
      hits.push({ id: Number(m.id), session_key: m.session_key, role: m.role, kind: m.kind, created_at: m.created_at, snippet: s ? s.s : '' });
    }
    return hits;
  };
}
`;

/** One SQLite search: the query's words (queryTerms), the page, the agent's session-key prefix, and the bounds. */
export interface SqliteSearchQuery {
  terms: string[];
  limit: number;
  offset: number;
  /** Only messages with ids up to this one (the first page's newest): later pages rank the same matches. */
  upTo?: number;
  agentPrefix?: string;
  window: number;
  maxExpansion: number;
  scanTerms: number;
  snippetWords: number;
}

export interface SqliteSearchHit {
  id: number;
  session_key: string;
  role: string;
  kind: string;
  created_at: string;
  snippet: string;
}

/** The same search, compiled in this thread over a connection of its own (the worker's fallback). */
export function inThreadSqliteSearch(db: SqliteDatabase): (q: SqliteSearchQuery) => SqliteSearchHit[] {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('db', `${SQLITE_SEARCH_SOURCE}\nreturn createSqliteSearch(db);`)(db) as (q: SqliteSearchQuery) => SqliteSearchHit[];
}
