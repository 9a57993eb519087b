// The event log's settled horizon on PostgreSQL: the transaction id below which every writer of this log has ended.
import { sql } from 'kysely';

/**
 * The oldest transaction still running in the statement's snapshot that may be ours, else the snapshot's xmax: every
 * transaction below it has ended, so rows with a lower `tx` are all committed (or gone) and none can appear late.
 * Not `pg_snapshot_xmin`: that is cluster-wide, so one long transaction in any other database of the server (a
 * pg_dump, a bulk load, another application's batch) held every live event back for as long as it ran (seen: a
 * 26-minute COPY in another database, and the room's live stream delivered nothing on PostgreSQL). A running
 * transaction is left out only when pg_stat_get_activity places it in another database; one it cannot place (ended
 * meanwhile, a background worker, hidden) still holds the horizon, as before.
 *
 * So it is not monotonic: a transaction of another database left out by one read can hold the next back, when it
 * ended between that read's snapshot and its pg_stat_get_activity (seen: 478 dips in 41,820 reads beside six
 * connections committing in another database). A reader may take a row below it as settled, never a row above it as
 * read: a page it cuts says nothing of what lies past the cut (server/events/subscription.ts).
 */
export const SETTLED_XID = sql<string>`(select coalesce(
  (select min(x) from pg_snapshot_xip(pg_current_snapshot()) x
    where (x::text::bigint % 4294967296)::text::xid not in (
      select a.backend_xid from pg_stat_get_activity(null) a
      where a.backend_xid is not null and a.datid <> (select oid from pg_database where datname = current_database()))),
  pg_snapshot_xmax(pg_current_snapshot())))`;
