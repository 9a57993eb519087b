// What sessions.delete leaves of a session: deleted, or moved to an archive key that no request can name.
import type { Kysely } from 'kysely';
import type { Database } from './schema';

/** Where a deleted session's kept rows go: `#` is outside the session key grammar, so no request names it. */
export const archiveKey = (key: string, at = Date.now()) => `${key}#deleted-${at}`;
/** Whether a key is an archive key (only they hold `#`). */
export const isArchiveKey = (key: string) => key.includes('#');
/** SQL LIKE pattern of archive keys: lists that show sessions leave them out (`not like`). */
export const ARCHIVE_KEY_LIKE = '%#%';

/**
 * In the delete's transaction: the session's row and tool rules go; its transcript and events go with
 * `deleteTranscript`, else they are kept; its runs, usage, approvals, deliveries and links to delegates are kept
 * either way (the store's totals and decision log stay whole). What is kept moves to `archiveKey(key)`, so a session
 * created again under the same key starts empty: nothing of the old one in its history, its model's context, its
 * usage, its delegates, its approvals or deliveries, or on the board.
 */
export async function deleteAndArchive(tx: Kysely<Database>, key: string, deleteTranscript: boolean): Promise<void> {
  const archived = archiveKey(key);
  await tx.deleteFrom('sessions').where('key', '=', key).execute();
  await tx.deleteFrom('session_tool_rules').where('session_key', '=', key).execute();
  if (deleteTranscript) {
    await tx.deleteFrom('messages').where('session_key', '=', key).execute();
    await tx.deleteFrom('events').where('session_key', '=', key).execute();
  }
  for (const table of deleteTranscript ? (['runs', 'model_usage', 'approvals'] as const) : (['messages', 'events', 'runs', 'model_usage', 'approvals'] as const))
    await tx.updateTable(table).set({ session_key: archived }).where('session_key', '=', key).execute();
  await tx.updateTable('deliveries').set({ from_session: archived }).where('from_session', '=', key).execute();
  await tx.updateTable('deliveries').set({ to_session: archived }).where('to_session', '=', key).execute();
  await tx.updateTable('session_links').set({ parent_key: archived }).where('parent_key', '=', key).execute();
  await tx.updateTable('session_links').set({ child_key: archived }).where('child_key', '=', key).execute();
  await tx.updateTable('sessions').set({ parent_key: archived }).where('parent_key', '=', key).execute();
}
