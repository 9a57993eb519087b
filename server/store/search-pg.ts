// sessions.search on PostgreSQL: the newest matches found by id-range steps (bounded work per query), ranked, paged.
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema';
import type { SqliteSearchHit } from './search-sqlite';
import { UNPREPARED } from './pg-plans';

export interface PgSearchQuery {
  terms: string[];
  limit: number;
  offset: number;
  /** Only messages with ids up to this one (the first page's newest). */
  upTo?: number;
  /** LIKE pattern on session_key (`agent:<id>:%`). */
  agentPrefix?: string;
  /** Rank among the newest this-many matches. */
  window: number;
  snippetWords: number;
  /** The first id range read (PG_FIRST_SPAN; tests make it small). */
  firstSpan?: number;
}

/** The first id range a search reads (newest messages); later ranges grow with the density the earlier ones showed. */
export const PG_FIRST_SPAN = 50_000;
/** A step never grows the range by more than this factor (a word absent from the newest range). */
const MAX_GROWTH = 8;

/*
 * Why steps: one `ORDER BY message_id DESC LIMIT window` over `tsv @@ q` made PostgreSQL either walk the primary key
 * backwards testing every row (~340,000 rows for a word in 1.5 % of messages) or take the GIN index and read every
 * match's row (tens of thousands of random heap pages, cold for a word nobody searched lately) to keep the newest
 * window. Each step here asks for the matches within one id range, newest range first: the planner bounds its work by
 * the range (a GIN bitmap ANDed with the range's pages from the BRIN index of 0022_pgsearch, so only that range's
 * matches are read from the heap, or a short backward walk for a common word), and the next range is sized from the matches per id seen so far, so the
 * last step reads about as many rows as the window still needs. A rare word ends in a step over everything older,
 * whose matches are few. Returned newest first, with each match's ts_rank.
 */
export async function newestMatches(
  db: Kysely<Database>,
  tsquery: string,
  window: number,
  firstSpan: number,
  newestId: number,
  /** Also says of each match whether it matches this query (the words whole): `whole`. */
  wholeQuery?: string,
): Promise<Array<{ id: number; score: number; whole: boolean }>> {
  let hi = newestId;
  const found: Array<{ id: number; score: number; whole: boolean }> = [];
  let span = firstSpan;
  let scanned = 0;
  while (hi > 0 && found.length < window) {
    const lo = Math.max(0, hi - span);
    const need = window - found.length;
    // Planned for these values each time (./pg-plans): the range and the words decide between the GIN index and a walk.
    const res = await sql<{ id: string; score: number; whole: boolean | null }>`${sql.raw(UNPREPARED)}
      SELECT s.message_id AS id, ts_rank(s.tsv, q) AS score, ${wholeQuery ? sql`s.tsv @@ to_tsquery('simple', ${wholeQuery})` : sql`null`} AS whole
      FROM message_search s, to_tsquery('simple', ${tsquery}) q
      WHERE s.tsv @@ q AND s.message_id > ${lo} AND s.message_id <= ${hi}
      ORDER BY s.message_id DESC
      LIMIT ${need}`.execute(db);
    for (const r of res.rows) found.push({ id: Number(r.id), score: Number(r.score), whole: r.whole === true });
    scanned += hi - lo;
    hi = lo;
    const still = window - found.length;
    if (still <= 0) break;
    // Matches per id so far; the next range is sized to hold what is still needed (a quarter more), within bounds.
    const perId = found.length / scanned;
    span = perId > 0 ? Math.min(span * MAX_GROWTH, Math.max(span, Math.ceil((still / perId) * 1.25))) : span * MAX_GROWTH;
  }
  return found;
}

/**
 * The matches holding the last word itself, whole, first, as on SQLite (server/store/search-sqlite.ts): ts_rank
 * scores `scalemark7:*` the same in "scalemark7" and "scalemark70". Then best match first (ts_rank among the newest
 * `window` matches), newest first among equals. Every statement here is planned for its own values (UNPREPARED,
 * ./pg-plans), never a generic plan.
 */
export async function searchPostgres(db: Kysely<Database>, q: PgSearchQuery): Promise<SqliteSearchHit[]> {
  const tsquery = q.terms.map((t, i) => (i === q.terms.length - 1 ? `${t}:*` : t)).join(' & ');
  const wholeQuery = q.terms.join(' & ');
  // The newest id, and the share of rows holding the query's rarest listed word (ANALYZE's most common elements of
  // tsv; every word must match, so the query's share is at most that): a word in 0.5 % of messages needs ~window /
  // 0.005 ids, so the first step reads about that many instead of stepping up to it, reading the word's GIN entries
  // once per step. The last word's prefix may match more than the word itself: that step then reads more matches.
  const top = await sql<{ max: string | null; share: number | null }>`${sql.raw(UNPREPARED)}
    SELECT (SELECT max(message_id) FROM message_search) AS max,
      (SELECT min(u.f) FROM pg_stats, unnest(most_common_elems::text::text[], most_common_elem_freqs) AS u(e, f)
        WHERE schemaname = current_schema() AND tablename = 'message_search' AND attname = 'tsv' AND u.e = ANY(${q.terms}::text[])) AS share`.execute(db);
  const share = Number(top.rows[0]?.share ?? 0);
  const firstSpan = q.firstSpan ?? (share > 0 ? Math.max(PG_FIRST_SPAN, Math.ceil((q.window / share) * 1.25)) : PG_FIRST_SPAN);
  const newest = Number(top.rows[0]?.max ?? 0);
  // Paging: the first page's matches (ids up to upTo), so rows added meanwhile shift no page.
  const upTo = q.upTo ? Math.min(q.upTo, newest) : newest;
  let ranked = await newestMatches(db, tsquery, q.window, firstSpan, upTo, wholeQuery);
  // A window full of completions may hide the word's own matches: its newest window joins (they rank first).
  if (ranked.length === q.window && ranked.some((r) => !r.whole)) {
    const seen = new Set(ranked.map((r) => r.id));
    for (const r of await newestMatches(db, wholeQuery, q.window, firstSpan, upTo)) if (!seen.has(r.id)) ranked.push({ ...r, whole: true });
  }
  ranked.sort((a, b) => Number(b.whole) - Number(a.whole) || b.score - a.score || b.id - a.id);
  if (q.agentPrefix && ranked.length) {
    // The agent filter needs each match's session; only then are the window's rows joined to messages.
    const keep = await sql<{ id: string }>`${sql.raw(UNPREPARED)} SELECT id FROM messages WHERE id = ANY(${ranked.map((r) => r.id)}::bigint[]) AND session_key LIKE ${q.agentPrefix}`.execute(db);
    const ids = new Set(keep.rows.map((r) => Number(r.id)));
    ranked = ranked.filter((r) => ids.has(r.id));
  }
  const page = ranked.slice(q.offset, q.offset + q.limit);
  if (!page.length) return [];
  const ids = page.map((r) => r.id);
  const opts = `StartSel="",StopSel="",MaxWords=${q.snippetWords},MinWords=6,ShortWord=0,FragmentDelimiter=" … "`;
  const res = await sql<SqliteSearchHit & { body: string }>`${sql.raw(UNPREPARED)}
    SELECT m.id, m.session_key, m.role, m.kind, m.created_at, s.body,
           ts_headline('simple', s.body, to_tsquery('simple', ${tsquery}), ${opts}) AS snippet
    FROM messages m JOIN message_search s ON s.message_id = m.id
    WHERE m.id = ANY(${ids}::bigint[]) AND s.message_id = ANY(${ids}::bigint[])`.execute(db);
  const byId = new Map(res.rows.map(({ body, ...r }) => [Number(r.id), { ...r, id: Number(r.id), snippet: hasTerm(r.snippet, q.terms) ? r.snippet : snippetAround(body, q.terms, q.snippetWords) }]));
  return page.flatMap((r) => byId.get(r.id) ?? []);
}

/** Whether a snippet shows one of the query's words (the last one as a prefix). */
function hasTerm(snippet: string, terms: string[]): boolean {
  const words = snippet.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.some((w) => terms.some((t, i) => (i === terms.length - 1 ? w.startsWith(t) : w === t)));
}

/**
 * About `words` words of the body around the first of the query's words, cut as text. ts_headline parses the body
 * with PostgreSQL's parser, which drops tag-like text (`<b>`, `a<b && c>d`) and sees no word inside a URL or a path:
 * its snippet then missed the match that the index (migration 0030) found.
 */
function snippetAround(body: string, terms: string[], words: number): string {
  const lower = body.toLowerCase();
  let at = -1;
  for (const t of terms) {
    const i = lower.search(new RegExp(`(?<![\\p{L}\\p{N}])${t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'u'));
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  if (at < 0) return body.split(/\s+/).slice(0, words).join(' ');
  const before = body.slice(0, at).split(/\s+/);
  const after = body.slice(at).split(/\s+/);
  const lead = before.slice(-Math.floor(words / 3) - 1);
  const cut = [...lead.slice(0, -1), (lead.at(-1) ?? '') + (after[0] ?? ''), ...after.slice(1, words - lead.length + 1)].join(' ').trim();
  return `${before.length > lead.length ? '… ' : ''}${cut}${after.length > words - lead.length + 1 ? ' …' : ''}`;
}
