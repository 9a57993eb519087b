// Service helpers for the room's cross-session views: transcript search and approvals' parent chains.
import { decodeCursor, encodeCursor } from '../store/cursor';
import { searchMessages } from '../store/search';
import type { Store } from '../store/store';
import type { SessionsSearchParams } from './schemas';
import type { SearchResult } from './types';

/** `sessions.search`: one query layer over both dialects; the cursor is the offset into this query's ranking. */
export async function searchSessions(store: Store, p: SessionsSearchParams): Promise<{ results: SearchResult[]; next_cursor: string | null }> {
  const limit = p.limit ?? 20;
  const scope = `${p.query}|${p.agentId ?? ''}`;
  const offset = p.cursor ? (decodeCursor(p.cursor, 'search', scope, 1)[0] as number) : 0;
  const hits = await searchMessages(store.db, store.dialect, { query: p.query, limit: limit + 1, offset, agentId: p.agentId }, store.sqliteSearch);
  const page = hits.slice(0, limit);
  return {
    results: page.map((h) => ({
      sessionKey: h.session_key,
      messageId: h.id,
      role: h.role,
      kind: h.kind,
      snippet: h.snippet.replace(/\s+/g, ' ').trim(),
      createdAt: h.created_at,
    })),
    next_cursor: hits.length > limit ? encodeCursor('search', scope, [offset + limit]) : null,
  };
}

/** The runs of a session that are going now (running or waiting for an approval), oldest first: what "Stop" cancels. */
export async function activeRunIds(store: Store, sessionKey: string): Promise<string[]> {
  const rows = await store.db
    .selectFrom('runs')
    .select('id')
    .where('session_key', '=', sessionKey)
    .where('status', 'in', ['running', 'waiting_approval'])
    .orderBy('created_at')
    .limit(20)
    .execute();
  return rows.map((r) => r.id);
}

/** Each session's ancestors, root first and ending with the session itself (main → delegate → delegate). */
export async function parentChains(store: Store, keys: string[]): Promise<Map<string, string[]>> {
  const parent = new Map<string, string | null>();
  // One query per level of the trees (not one per session and ancestor: the board's 200 items cost 600 round trips).
  let want = [...new Set(keys)];
  for (let depth = 0; want.length && depth < 16; depth++) {
    const next = new Set<string>();
    for (let i = 0; i < want.length; i += 500) {
      const part = want.slice(i, i + 500);
      const rows = await store.db.selectFrom('sessions').select(['key', 'parent_key']).where('key', 'in', part).execute();
      const found = new Map(rows.map((r) => [r.key, r.parent_key]));
      for (const k of part) {
        const p = found.get(k) ?? null;
        parent.set(k, p);
        if (p && !parent.has(p)) next.add(p);
      }
    }
    want = [...next];
  }
  const out = new Map<string, string[]>();
  for (const key of new Set(keys)) {
    const chain: string[] = [];
    let k: string | null = key;
    // Bounded: delegate depth is limited, and a cycle in bad data must not hang the call.
    for (let depth = 0; k && depth < 16 && !chain.includes(k); depth++) {
      chain.unshift(k);
      k = parent.get(k) ?? null;
    }
    out.set(key, chain);
  }
  return out;
}
