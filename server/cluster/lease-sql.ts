// The cluster's writes that free MANY sessions in one statement (a dead process's, a stopping one's, those claimed
// under an identity already declared dead). They lock the rows in key order, the order every other statement that
// locks several sessions uses (the fenced event insert, server/store/store-base.ts): two such statements never each
// hold a row the other waits for, which is how a sweep and an event write met as `deadlock detected` (40P01).
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../store/schema';

/** A lease epoch no session ever had (0011_fencing): a claim, a release and a takeover each take one. */
export const NEXT_EPOCH = sql<number>`nextval('session_epochs')`;

/**
 * Frees the sessions `which` selects (a condition on `sessions s`), bumping each one's epoch (fencing whatever their
 * holder still writes): the rows are locked in key order first, then updated. Returns how many were freed.
 */
async function freeWhere(db: Kysely<Database>, which: RawBuilder<unknown>): Promise<number> {
  const r = await sql`
    with locked as (select s.key from sessions s where ${which} order by s.key for update)
    update sessions set owner = null, epoch = ${NEXT_EPOCH}
    from locked where sessions.key = locked.key and sessions.owner is not null`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** Frees every session held by process `owner` (found dead, or stopping). */
export const freeSessionsOf = (db: Kysely<Database>, owner: string) => freeWhere(db, sql`s.owner = ${owner}`);

/** Frees the sessions held under identities no longer alive (a zombie's late claims), other than `me`'s. */
export const freeSessionsOfGone = (db: Kysely<Database>, me: string) =>
  freeWhere(db, sql`s.owner is not null and s.owner in (select id from processes where status <> 'alive' and id <> ${me})`);
