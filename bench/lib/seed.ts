// Seeds long transcripts straight into the SQLite store (server stopped), far faster than driving turns.
import path from 'node:path';
import Database from 'better-sqlite3';

export interface SeedSpec {
  sessionKey: string;
  agentId: string;
  messages: number;
}

/**
 * Writes `messages` transcript rows per session in one transaction each. The mix is a plausible
 * conversation: user / assistant turns with a tool call + result every fifth exchange, so the
 * default history (tools left out) has to skip rows, as it does on a real session.
 * The store must already exist (the server has run its migrations once on this data dir).
 */
export function seedTranscripts(dataDir: string, specs: SeedSpec[]): { rows: number; ms: number } {
  const t0 = performance.now();
  const db = new Database(path.join(dataDir, 'crosstalk.sqlite'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    const tables = db.prepare("select name from sqlite_master where type = 'table' and name in ('sessions', 'messages')").all();
    if (tables.length !== 2) throw new Error(`store in ${dataDir} has no sessions/messages tables (start the server once first)`);

    const insertSession = db.prepare(
      `insert into sessions (key, agent_id, kind, label, model, thinking_level, spawn_depth, queue_mode, parent_key, meta,
         created_at, last_activity_at, message_count, bytes, status)
       values (?, ?, 'other', ?, null, null, 0, null, null, null, ?, ?, ?, ?, 'idle')`,
    );
    const insertMessage = db.prepare(
      `insert into messages (session_key, role, kind, content, created_at, run_id, author_type, author_id, author_name,
         tool_name, tool_call_id, tool_args, tool_result, meta)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null)`,
    );

    let rows = 0;
    for (const spec of specs) {
      const base = Date.now() - spec.messages * 1000;
      db.transaction(() => {
        let bytes = 0;
        for (let i = 0; i < spec.messages; i++) {
          const createdAt = new Date(base + i * 1000).toISOString();
          const runId = `bench-run-${Math.floor(i / 2)}`;
          const slot = i % 10;
          let content: string;
          if (slot === 6 || slot === 7) {
            // a tool call and its result
            const isCall = slot === 6;
            const args = JSON.stringify({ command: `echo ${i}` });
            const result = JSON.stringify({ status: 'ok', exitCode: 0, stdout: `${i}\n`, stderr: '' });
            content = '';
            bytes += args.length + (isCall ? 0 : result.length);
            insertMessage.run(
              spec.sessionKey,
              isCall ? 'assistant' : 'tool',
              isCall ? 'tool_call' : 'tool_result',
              content,
              createdAt,
              runId,
              'agent',
              spec.agentId,
              null,
              'exec',
              `call-${i - (isCall ? 0 : 1)}`,
              args,
              isCall ? null : result,
            );
          } else if (i % 2 === 0) {
            content = `message ${i}: how is the benchmark going? ${'lorem ipsum '.repeat(6)}`;
            bytes += Buffer.byteLength(content);
            insertMessage.run(spec.sessionKey, 'user', 'message', content, createdAt, runId, 'user', 'user', null, null, null, null, null);
          } else {
            content = `echo: reply ${i} ${'dolor sit amet '.repeat(8)}`;
            bytes += Buffer.byteLength(content);
            insertMessage.run(spec.sessionKey, 'assistant', 'message', content, createdAt, runId, 'agent', spec.agentId, null, null, null, null, null);
          }
          rows++;
        }
        const last = new Date(base + spec.messages * 1000).toISOString();
        insertSession.run(spec.sessionKey, spec.agentId, `bench ${spec.messages}`, new Date(base).toISOString(), last, spec.messages, bytes);
      })();
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    return { rows, ms: performance.now() - t0 };
  } finally {
    db.close();
  }
}
