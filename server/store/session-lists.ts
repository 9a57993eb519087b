// The session lists: the sidebar's sessions and a parent's delegates, keyset-paged, and the delegate counters. Store
// (store.ts) builds on it; fencing below it in FencedStore.
import { sql } from 'kysely';
import type { SessionRow } from './schema';
import { FencedStore } from './fences';
import { nowIso } from './store-base';

export class SessionLists extends FencedStore {
  /** Newest activity first, keyset on (last_activity_at, key). */
  listSessions(o: { limit: number; after?: [string, string]; agentId?: string; kind?: string }) {
    let q = this.db.selectFrom('sessions').selectAll();
    if (o.agentId) q = q.where('agent_id', '=', o.agentId);
    if (o.kind) q = q.where('kind', '=', o.kind);
    if (o.after) {
      const [ts, key] = o.after;
      q = q.where((eb) => eb.or([eb('last_activity_at', '<', ts), eb.and([eb('last_activity_at', '=', ts), eb('key', '<', key)])]));
    }
    return q.orderBy('last_activity_at', 'desc').orderBy('key', 'desc').limit(o.limit).execute();
  }

  /** A parent's delegate sessions, newest interaction first, keyset on (last_interacted_at, key). */
  listDelegates(o: { parentKey: string; limit: number; after?: [string, string] }): Promise<SessionRow[]> {
    let q = this.db.selectFrom('sessions').selectAll().where('parent_key', '=', o.parentKey).where('kind', '=', 'subagent').where('dismissed_at', 'is', null);
    if (o.after) {
      const [ts, key] = o.after;
      q = q.where((eb) => eb.or([eb('last_interacted_at', '<', ts), eb.and([eb('last_interacted_at', '=', ts), eb('key', '<', key)])]));
    }
    return q.orderBy('last_interacted_at', 'desc').orderBy('key', 'desc').limit(o.limit).execute();
  }

  async delegateStats(): Promise<{ reusable: number; bytes: number }> {
    const r = await this.db
      .selectFrom('sessions')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum<number>('bytes').as('b')])
      // A literal, as the partial index (0024_sparse_indexes) names it: a bound value would not prove the index usable.
      .where('kind', '=', sql.lit('subagent'))
      .where('dismissed_at', 'is', null)
      .executeTakeFirst();
    return { reusable: Number(r?.n ?? 0), bytes: Number(r?.b ?? 0) };
  }

  /** Marks a delegate engaged by its parent now (a new prompt): it moves to the front of the list. */
  async touchDelegate(key: string): Promise<void> {
    await this.db
      .updateTable('sessions')
      .set((eb) => ({ last_interacted_at: nowIso(), turns: eb('turns', '+', 1) }))
      .where('key', '=', key)
      .execute();
  }
}
