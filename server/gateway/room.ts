// Service helpers for the room's cross-session views: transcript search and approvals' parent chains.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { decodeCursor, encodeCursor } from '../store/cursor';
import { searchMessages } from '../store/search';
import type { SessionRow } from '../store/schema';
import type { Store } from '../store/store';
import { IN_FLIGHT, MAX_TREE_DEPTH } from '../store/store-base';
import type { SessionsSearchParams } from './schemas';
import type { SearchResult } from './types';

/** The newest message's id (0 when there is none): where a search's pages stop. */
async function newestMessageId(store: Store): Promise<number> {
  const r = await store.db.selectFrom('messages').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
  return Number(r?.m ?? 0);
}

/** `sessions.search`: one query layer over both dialects; the cursor is the offset into this query's ranking. */
export async function searchSessions(store: Store, p: SessionsSearchParams): Promise<{ results: SearchResult[]; next_cursor: string | null }> {
  const limit = p.limit ?? 20;
  // The query in the cursor as a digest: the whole query made cursors longer than a cursor may be (2048).
  const scope = crypto.createHash('sha256').update(`${p.query}\u0000${p.agentId ?? ''}`).digest('base64url').slice(0, 22);
  // A cursor holds the offset into the ranking and the newest message id of the first page's store: later pages rank
  // the same matches, so rows added meanwhile neither repeat nor push a row past a page.
  const [offset, upTo] = p.cursor ? (decodeCursor(p.cursor, 'search', scope, 2) as [number, number]) : [0, await newestMessageId(store)];
  const hits = upTo ? await searchMessages(store.db, store.dialect, { query: p.query, limit: limit + 1, offset, upTo, agentId: p.agentId }, store.sqliteSearch) : [];
  // Rows of a deleted session (its transcript kept: sessions.delete without deleteTranscript) are not hits: the
  // session they would open is gone (chat.history answers unknown_session). Paging counts the raw hits still.
  const raw = hits.slice(0, limit);
  const keys = [...new Set(raw.map((h) => h.session_key))];
  const live = keys.length ? new Set((await store.db.selectFrom('sessions').select('key').where('key', 'in', keys).execute()).map((r) => r.key)) : new Set<string>();
  const page = raw.filter((h) => live.has(h.session_key));
  return {
    results: page.map((h) => ({
      sessionKey: h.session_key,
      messageId: h.id,
      role: h.role,
      kind: h.kind,
      snippet: h.snippet.replace(/\s+/g, ' ').trim(),
      createdAt: h.created_at,
    })),
    next_cursor: hits.length > limit ? encodeCursor('search', scope, [offset + limit, upTo]) : null,
  };
}

/** The runs of a session that are going now (running or waiting for an approval), oldest first: what "Stop" cancels. */
export async function activeRunIds(store: Store, sessionKey: string): Promise<string[]> {
  const rows = await store.db
    .selectFrom('runs')
    .select('id')
    .where('session_key', '=', sessionKey)
    .where('status', 'in', IN_FLIGHT)
    .orderBy('created_at')
    .limit(20)
    .execute();
  return rows.map((r) => r.id);
}


/** Each session's ancestors, root first and ending with the session itself (main → delegate → delegate). */
export async function parentChains(store: Store, keys: string[]): Promise<Map<string, string[]>> {
  const parent = new Map<string, string | null>();
  // One recursive statement walks every tree up (not one query per level, nor one per session and ancestor: the
  // board's 200 items over delegate trees three deep cost 600 round trips, then 3–4, now 1). Each step up is a lookup
  // by key (a scalar subquery: PostgreSQL scanned the whole sessions table for `key in (…)` and hashed it for a join); `union` drops
  // repeats; the depth bound ends a cycle in bad data. A parent with no row of its own ends its chain.
  const want = [...new Set(keys)];
  for (let i = 0; i < want.length; i += 500) {
    const part = want.slice(i, i + 500);
    const { rows } = await sql<{ key: string; parent_key: string | null }>`with recursive up(key, parent_key, depth) as (
        select k.column1, (select s.parent_key from sessions s where s.key = k.column1), 0 from (values ${sql.join(part.map((key) => sql`(${key})`))}) k
        union
        select up.parent_key, (select s.parent_key from sessions s where s.key = up.parent_key), up.depth + 1 from up
          where up.parent_key is not null and up.depth < ${MAX_TREE_DEPTH}
      ) select key, parent_key from up`.execute(store.db);
    for (const r of rows) parent.set(r.key, r.parent_key);
  }
  const out = new Map<string, string[]>();
  for (const key of want) {
    const chain: string[] = [];
    let k: string | null = key;
    // Bounded: delegate depth is limited, and a cycle in bad data must not hang the call.
    for (let depth = 0; k && depth < MAX_TREE_DEPTH && !chain.includes(k); depth++) {
      chain.unshift(k);
      k = parent.get(k) ?? null;
    }
    out.set(key, chain);
  }
  return out;
}

/** At most this many sessions above a page's delegates come with the page. */
const PAGE_PARENTS_MAX = 200;

/**
 * The sessions above a page's delegates that the page does not hold (CONTRACT §7: the sidebar nests a delegate under
 * its parent, and the parent shows the attention badge while a descendant waits): without them, a delegate whose
 * parent's last activity was older than the page showed as a root of its own, and the parent, badge and all, only
 * after "Load more sessions". Their chains walked up in one statement, their rows read in one more.
 */
export async function pageParents(store: Store, page: readonly SessionRow[]): Promise<SessionRow[]> {
  const onPage = new Set(page.map((r) => r.key));
  const orphans = page.filter((r) => r.parent_key && !onPage.has(r.parent_key)).map((r) => r.key);
  if (!orphans.length) return [];
  const want = new Set<string>();
  for (const chain of (await parentChains(store, orphans)).values()) for (const key of chain) if (!onPage.has(key)) want.add(key);
  if (!want.size) return [];
  return store.db.selectFrom('sessions').selectAll().where('key', 'in', [...want].slice(0, PAGE_PARENTS_MAX)).execute();
}
