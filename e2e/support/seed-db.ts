// Test-only seeding, run by the Playwright web server command BEFORE the server starts: opens the e2e data dir's
// SQLite store with the server's own migrations, then writes rows directly (far faster than thousands of `agent` calls).
import path from 'node:path';
import { openDatabase } from '../../server/store/db';
import type { NewMessageRow as Row } from '../../server/store/schema';
import { FOLLOW_UP_RESPONSE, ARCHIVE_AGENT, ARCHIVE_SESSIONS, archiveSessionKey, BIG_ROWS, BIG_SESSION, KINDS_SESSION } from './seed-keys';

/** A `sessions` row with the defaults every seeded session shares. */
function sessionRow(o: { key: string; agent_id: string; at: string; last_activity_at: string; message_count: number; bytes: number }) {
  return {
    key: o.key,
    agent_id: o.agent_id,
    kind: 'other',
    label: null,
    model: null,
    thinking_level: null,
    spawn_depth: 0,
    queue_mode: null,
    parent_key: null,
    meta: null,
    created_at: o.at,
    last_activity_at: o.last_activity_at,
    message_count: o.message_count,
    bytes: o.bytes,
    status: 'idle',
    last_interacted_at: null,
    turns: 0,
    dismissed_at: null,
  };
}

async function main() {
  const dataDir = process.argv[2];
  if (!dataDir) throw new Error('usage: seed-db <dataDir>');
  const handle = await openDatabase({ dataDir: path.resolve(dataDir) });
  const db = handle.db;
  const t0 = Date.parse('2024-01-01T00:00:00Z');
  const iso = (i: number) => new Date(t0 + i * 1000).toISOString();

  const base = (sessionKey: string, i: number) => ({ session_key: sessionKey, created_at: iso(i), run_id: null, author_name: null, tool_name: null, tool_call_id: null, tool_args: null, tool_result: null, meta: null });

  const big: Row[] = [];
  for (let i = 0; i < BIG_ROWS; i++) {
    const user = i % 2 === 0;
    big.push({
      ...base(BIG_SESSION, i),
      role: user ? 'user' : 'assistant',
      kind: 'message',
      content: user ? `seeded row ${i}` : `seeded row ${i}${i % 7 === 1 ? '\nwith a second line\nand a third' : ''}`,
      author_type: user ? 'user' : 'agent',
      author_id: user ? 'user' : 'main',
    });
  }

  const k = KINDS_SESSION;
  const kinds: Row[] = [
    { ...base(k, 1), role: 'user', kind: 'message', content: 'kinds: hello', author_type: 'user', author_id: 'user' },
    { ...base(k, 2), role: 'assistant', kind: 'message', content: 'a persona post', author_type: 'persona', author_id: 'main', author_name: 'Main Persona' },
    { ...base(k, 3), role: 'user', kind: 'inter_session', content: 'hello from writer', author_type: 'agent', author_id: 'writer', meta: JSON.stringify({ fromSessionKey: 'agent:writer:main' }) },
    {
      ...base(k, 4),
      role: 'user',
      kind: 'agent_callback_result',
      content: 'callback says done',
      author_type: 'agent',
      author_id: 'researcher',
      meta: JSON.stringify({ fromSessionKey: 'agent:researcher:subagent:seeded1', runId: 'run_seeded', delegate: { conversation_id: 'agent:researcher:subagent:seeded1', followUp: true } }),
    },
    {
      ...base(k, 5),
      role: 'system',
      kind: 'delegate_follow_up_started',
      content: 'Dig deeper into the second source',
      author_type: 'system',
      author_id: 'system',
      meta: JSON.stringify({ conversation_id: 'agent:researcher:subagent:seeded1', agent_id: 'researcher', run_id: 'run_f1', label: '(follow-up)' }),
    },
    {
      ...base(k, 6),
      role: 'system',
      kind: 'delegate_follow_up_completed',
      content: FOLLOW_UP_RESPONSE,
      author_type: 'system',
      author_id: 'system',
      meta: JSON.stringify({ conversation_id: 'agent:researcher:subagent:seeded1', agent_id: 'researcher', run_id: 'run_f1', label: '(follow-up)' }),
    },
    { ...base(k, 7), role: 'assistant', kind: 'mirror', content: 'mirrored to telegram', author_type: 'channel', author_id: 'telegram' },
    { ...base(k, 8), role: 'user', kind: 'steer', content: 'steer this way', author_type: 'user', author_id: 'user' },
    { ...base(k, 9), role: 'system', kind: 'notice', content: 'a notice for everyone', author_type: 'system', author_id: 'system' },
  ];

  const now = iso(BIG_ROWS + 10);
  await db.transaction().execute(async (tx) => {
    for (const [key, rows] of [[BIG_SESSION, big], [KINDS_SESSION, kinds]] as const) {
      await tx
        .insertInto('sessions')
        .values(sessionRow({
          key,
          agent_id: 'main',
          at: iso(0),
          last_activity_at: key === BIG_SESSION ? iso(0) : iso(1),
          message_count: rows.length,
          bytes: rows.reduce((n, r) => n + Buffer.byteLength(String(r.content)), 0),
        }))
        .execute();
      for (let i = 0; i < rows.length; i += 500) await tx.insertInto('messages').values(rows.slice(i, i + 500)).execute();
    }
    // Empty sessions from 2023 (before every other row): the sidebar's later pages.
    const old = Date.parse('2023-01-01T00:00:00Z');
    const archived = Array.from({ length: ARCHIVE_SESSIONS }, (_, i) => {
      const at = new Date(old - i * 60_000).toISOString();
      return sessionRow({ key: archiveSessionKey(i), agent_id: ARCHIVE_AGENT, at, last_activity_at: at, message_count: 0, bytes: 0 });
    });
    await tx.insertInto('sessions').values(archived).execute();
  });
  await handle.searchIndexer?.catchUp(); // the seeded transcript searchable from the server's start
  await handle.close();
  console.log(`seed-db: ${BIG_ROWS} rows in ${BIG_SESSION}, ${kinds.length} in ${KINDS_SESSION}, ${ARCHIVE_SESSIONS} empty ${ARCHIVE_AGENT} sessions (${now})`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
