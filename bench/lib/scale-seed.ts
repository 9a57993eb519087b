// Seeds the bench:scale store straight into SQLite (big transactions) or PostgreSQL (COPY through psql): N sessions,
// 100 messages each (Zipf-drawn words, a tool call and result every 10), 5 ended runs each with one model_usage row,
// and the newest TREE_SESSIONS sessions in delegate trees three deep (a root, 3 children, 6 grandchildren).
import { spawn } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { fillSearchTerms } from '../../server/store/migrations-search';
import { USAGE_TOTAL_SHARDS } from '../../server/store/migrations-scale';
import { zipfWords } from './zipf-words';

export const PER_SESSION = 100;
export const RUNS_PER_SESSION = 5;
export const TREE_SESSIONS = 10_000;
const BASE = Date.parse('2026-01-01T00:00:00Z');

// Made-up words drawn with a Zipf law (bench/lib/zipf-words.ts, as bench/room.ts).
export { word } from './zipf-words';
const { zipfWord, sentence } = zipfWords(42);

/** The word planted once in session s's first message: search must find exactly that message. */
export const markWord = (s: number) => `scalemark${s}`;

export interface SeedSession {
  key: string;
  agent: string;
  kind: string;
  parent: string | null;
  depth: number;
  at: string;
}

/** Session s (0 = oldest). The newest TREE_SESSIONS are delegate trees: root, 3 children, 6 grandchildren. */
export function sessionOf(s: number, total: number): SeedSession {
  const at = new Date(BASE + s * 60_000).toISOString();
  const tree = s >= total - TREE_SESSIONS;
  if (!tree) {
    const agent = ['main', 'researcher', 'writer'][s % 3]!;
    return { key: `agent:${agent}:bench-${s}`, agent, kind: 'other', parent: null, depth: 0, at };
  }
  const pos = s % 10;
  const root = s - pos;
  const rootKey = `agent:main:bench-${root}`;
  if (pos === 0) return { key: rootKey, agent: 'main', kind: 'main', parent: null, depth: 0, at };
  if (pos <= 3) return { key: `agent:researcher:bench-${s}`, agent: 'researcher', kind: 'subagent', parent: rootKey, depth: 1, at };
  const child = root + 1 + Math.floor((pos - 4) / 2);
  return { key: `agent:writer:bench-${s}`, agent: 'writer', kind: 'subagent', parent: `agent:researcher:bench-${child}`, depth: 2, at };
}

export interface SeedMessage {
  role: string;
  kind: string;
  content: string;
  run: string;
  authorType: string;
  authorId: string;
  toolName: string | null;
  toolCallId: string | null;
  toolArgs: string | null;
  toolResult: string | null;
  /** What the search index holds for it (content, then the string/number leaves of args and result). */
  body: string;
}

function messagesOf(s: number, ss: SeedSession): SeedMessage[] {
  const out: SeedMessage[] = [];
  for (let i = 0; i < PER_SESSION; i++) {
    const slot = i % 10;
    const run = `bench-${s}-${Math.floor(i / (PER_SESSION / RUNS_PER_SESSION))}`;
    if (slot === 6) {
      const cmd = `grep ${zipfWord()} notes.txt`;
      out.push({ role: 'assistant', kind: 'tool_call', content: '', run, authorType: 'agent', authorId: ss.agent, toolName: 'exec', toolCallId: `c-${s}-${i}`, toolArgs: JSON.stringify({ command: cmd }), toolResult: null, body: `\n${cmd}\n` });
    } else if (slot === 7) {
      const stdout = `${sentence(10)}\n`;
      out.push({ role: 'tool', kind: 'tool_result', content: '', run, authorType: 'system', authorId: 'exec', toolName: 'exec', toolCallId: `c-${s}-${i - 1}`, toolArgs: JSON.stringify({ command: 'grep' }), toolResult: JSON.stringify({ status: 'ok', exitCode: 0, stdout, stderr: '' }), body: `\ngrep\nok\n0\n${stdout}\n` });
    } else {
      const content = sentence(12 + (i % 7)) + (i === 0 ? ` ${markWord(s)}` : '');
      const user = i % 2 === 0;
      out.push({ role: user ? 'user' : 'assistant', kind: 'message', content, run, authorType: user ? 'user' : 'agent', authorId: user ? 'user' : ss.agent, toolName: null, toolCallId: null, toolArgs: null, toolResult: null, body: `${content}\n\n` });
    }
  }
  return out;
}

const runAt = (ss: SeedSession, k: number) => new Date(Date.parse(ss.at) - (RUNS_PER_SESSION - k) * 1000).toISOString();
const runStatus = (s: number, k: number) => (k === RUNS_PER_SESSION - 1 && s % 7 === 0 ? 'error' : 'ok');
const rootRun = (s: number, total: number, k: number) => {
  const ss = sessionOf(s, total);
  return ss.parent ? `bench-${s - (s % 10)}-${k}` : `bench-${s}-${k}`;
};

type Progress = (done: number, total: number) => void;

/** SQLite: the store's own tables, FTS triggers on; 2,000 sessions per transaction. */
export function seedSqlite(dataDir: string, sessions: number, progress: Progress): void {
  const db = new Database(path.join(dataDir, 'crosstalk.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144');
  const insS = db.prepare(
    `insert into sessions (key, agent_id, kind, spawn_depth, parent_key, created_at, last_activity_at, last_interacted_at, message_count, bytes, status, turns)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 'idle', ?)`,
  );
  const insM = db.prepare(
    `insert into messages (session_key, role, kind, content, created_at, run_id, author_type, author_id, tool_name, tool_call_id, tool_args, tool_result)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insR = db.prepare(`insert into runs (id, session_key, status, input, queue_mode, response, error, created_at, started_at, ended_at, last_seq) values (?, ?, ?, ?, 'collect', ?, ?, ?, ?, ?, 0)`);
  const insU = db.prepare(
    `insert into model_usage (run_id, session_key, agent_id, model, kind, input_tokens, output_tokens, cached_tokens, cost_usd, priced, root_run_id, created_at) values (?, ?, ?, 'scripted', 'step', 1200, 300, 0, 0.0021, 1, ?, ?)`,
  );
  // The FTS triggers (server/store/search.ts) off while loading: the index rows are written here, from the same text
  // the triggers would derive, and the triggers put back as they were.
  const triggers = db.prepare(`select name, sql from sqlite_master where type = 'trigger' and tbl_name = 'messages' and name like 'messages_fts_%'`).all() as Array<{ name: string; sql: string }>;
  for (const tr of triggers) db.exec(`drop trigger ${tr.name}`);
  db.exec(`insert into messages_fts(messages_fts, rank) values ('automerge', 0)`);
  const insF = db.prepare('insert into messages_fts(rowid, body) values (?, ?)');
  const batch = db.transaction((from: number, to: number) => {
    for (let s = from; s < to; s++) {
      const ss = sessionOf(s, sessions);
      insS.run(ss.key, ss.agent, ss.kind, ss.depth, ss.parent, ss.at, ss.at, ss.parent ? ss.at : null, PER_SESSION, RUNS_PER_SESSION);
      for (let k = 0; k < RUNS_PER_SESSION; k++) {
        const at = runAt(ss, k);
        const st = runStatus(s, k);
        insR.run(`bench-${s}-${k}`, ss.key, st, JSON.stringify({ message: 'seeded' }), st === 'ok' ? 'done' : null, st === 'ok' ? null : JSON.stringify({ code: 'internal', message: 'seeded failure' }), at, at, at);
        insU.run(`bench-${s}-${k}`, ss.key, ss.agent, rootRun(s, sessions, k), at);
      }
      for (const m of messagesOf(s, ss)) insF.run(insM.run(ss.key, m.role, m.kind, m.content, ss.at, m.run, m.authorType, m.authorId, m.toolName, m.toolCallId, m.toolArgs, m.toolResult).lastInsertRowid, m.body);
    }
  });
  for (let s = 0; s < sessions; s += 5000) {
    batch(s, Math.min(sessions, s + 5000));
    progress(Math.min(sessions, s + 5000), sessions);
  }
  db.exec(`insert into messages_fts(messages_fts) values ('optimize')`);
  // sessions.search's word list (0021_search_terms), whose triggers were set aside with the index's.
  db.exec(fillSearchTerms);
  db.exec(`insert into messages_fts(messages_fts, rank) values ('automerge', 4)`);
  // Every message loaded is indexed: the store's batch indexer (server/store/search-indexer.ts) goes on after them.
  db.exec(`update search_indexed set upto = (select coalesce(max(id), 0) from messages)`);
  for (const tr of triggers) db.exec(tr.sql);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.exec('analyze');
  db.close();
}

// COPY text format: backslash, tab, newline and carriage return escaped; \N is null.
const esc = (v: string | number | null) => (v === null ? '\\N' : String(v).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r'));
const line = (...vs: Array<string | number | null>) => `${vs.map(esc).join('\t')}\n`;

/** `COPY table (cols) FROM STDIN` through psql, fed by `rows` (chunks of COPY text); resolves when psql is done. */
async function copy(url: string, table: string, cols: string[], rows: AsyncIterable<string> | Iterable<string>): Promise<void> {
  const u = new URL(url);
  const child = spawn('psql', ['-h', u.hostname, '-p', u.port || '5432', '-d', u.pathname.slice(1), '-v', 'ON_ERROR_STOP=1', '-q', '-c', `COPY ${table} (${cols.join(', ')}) FROM STDIN`], {
    stdio: ['pipe', 'inherit', 'inherit'],
    env: { ...process.env, PGUSER: process.env.PGUSER ?? process.env.USER ?? 'root' },
  });
  const done = new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql COPY ${table} exited ${code}`)))));
  for await (const chunk of rows) if (!child.stdin.write(chunk)) await new Promise((r) => child.stdin.once('drain', r));
  child.stdin.end();
  await done;
}

/** The run-count triggers on `runs` (one per operation since 0027_backend_shards). */
const RUN_COUNT_TRIGGERS = ['runs_counts_insert', 'runs_counts_update', 'runs_counts_delete'];

/** PostgreSQL (a database of its own, migrated by a first start): COPY with the search trigger off and its GIN index rebuilt after. */
export async function seedPostgres(url: string, sessions: number, progress: Progress): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('alter table messages disable trigger messages_search_index');
    // The counters kept by triggers (0019_scale: run_counts, usage_totals) are computed once after the load: row by
    // row, half a million upserts onto 48 rows in one COPY's transaction each walk a version chain that grows with
    // every upsert (seen: a 100,000-session seed stuck over an hour in COPY runs).
    for (const t of RUN_COUNT_TRIGGERS) await client.query(`alter table runs disable trigger ${t}`);
    await client.query('alter table model_usage disable trigger model_usage_totals');
    // The search index (GIN) is built once after the load, not row by row: whichever the migrations made.
    const gin = (await client.query<{ name: string; def: string }>(`select indexname as name, indexdef as def from pg_indexes where tablename = 'message_search' and indexdef ilike '%using gin%'`)).rows;
    for (const g of gin) await client.query(`drop index ${g.name}`);
    const sessionsRows = function* () {
      for (let s = 0; s < sessions; s++) {
        const ss = sessionOf(s, sessions);
        yield line(ss.key, ss.agent, ss.kind, ss.depth, ss.parent, ss.at, ss.at, ss.parent ? ss.at : null, PER_SESSION, 0, 'idle', RUNS_PER_SESSION);
      }
    };
    await copy(url, 'sessions', ['key', 'agent_id', 'kind', 'spawn_depth', 'parent_key', 'created_at', 'last_activity_at', 'last_interacted_at', 'message_count', 'bytes', 'status', 'turns'], sessionsRows());
    const runRows = function* () {
      for (let s = 0; s < sessions; s++) {
        const ss = sessionOf(s, sessions);
        let chunk = '';
        for (let k = 0; k < RUNS_PER_SESSION; k++) {
          const at = runAt(ss, k);
          const st = runStatus(s, k);
          chunk += line(`bench-${s}-${k}`, ss.key, st, JSON.stringify({ message: 'seeded' }), 'collect', st === 'ok' ? 'done' : null, st === 'ok' ? null : JSON.stringify({ code: 'internal', message: 'seeded failure' }), at, at, at, 0);
        }
        yield chunk;
      }
    };
    await copy(url, 'runs', ['id', 'session_key', 'status', 'input', 'queue_mode', 'response', 'error', 'created_at', 'started_at', 'ended_at', 'last_seq'], runRows());
    const usageRows = function* () {
      for (let s = 0; s < sessions; s++) {
        const ss = sessionOf(s, sessions);
        let chunk = '';
        for (let k = 0; k < RUNS_PER_SESSION; k++) chunk += line(`bench-${s}-${k}`, ss.key, ss.agent, 'scripted', 'step', 1200, 300, 0, 0.0021, 1, rootRun(s, sessions, k), runAt(ss, k));
        yield chunk;
      }
    };
    await copy(url, 'model_usage', ['run_id', 'session_key', 'agent_id', 'model', 'kind', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost_usd', 'priced', 'root_run_id', 'created_at'], usageRows());
    // Messages and their search rows, with explicit ids (the sequence is moved past them after).
    const start = Number((await client.query<{ n: string }>('select coalesce(max(id), 0)::text as n from messages')).rows[0]!.n) + 1;
    const bodies: string[] = [];
    const messageRows = async function* () {
      let id = start;
      for (let s = 0; s < sessions; s++) {
        const ss = sessionOf(s, sessions);
        let chunk = '';
        let body = '';
        for (const m of messagesOf(s, ss)) {
          chunk += line(id, ss.key, m.role, m.kind, m.content, ss.at, m.run, m.authorType, m.authorId, m.toolName, m.toolCallId, m.toolArgs, m.toolResult);
          body += line(id, m.body);
          id++;
        }
        bodies.push(body);
        if (s % 1000 === 999) progress(s + 1, sessions);
        yield chunk;
      }
    };
    // The search rows go through a second COPY at the same pace (their text kept only until written).
    const searchCopy = copy(url, 'message_search', ['message_id', 'body'], (async function* () {
      for (let s = 0; s < sessions; ) {
        if (bodies.length) {
          yield bodies.shift()!;
          s++;
        } else await new Promise((r) => setTimeout(r, 5));
      }
    })());
    await copy(url, 'messages', ['id', 'session_key', 'role', 'kind', 'content', 'created_at', 'run_id', 'author_type', 'author_id', 'tool_name', 'tool_call_id', 'tool_args', 'tool_result'], messageRows());
    await searchCopy;
    await client.query(`select setval(pg_get_serial_sequence('messages', 'id'), (select max(id) from messages))`);
    await client.query(`select setval(pg_get_serial_sequence('model_usage', 'id'), (select max(id) from model_usage))`);
    await client.query("set maintenance_work_mem = '1GB'");
    for (const g of gin) await client.query(g.def);
    await client.query('alter table messages enable trigger messages_search_index');
    await client.query('begin');
    await client.query('delete from run_counts');
    await client.query(`insert into run_counts (status, shard, n) select status, abs(hashtext(id)) % ${USAGE_TOTAL_SHARDS}, count(*) from runs where status in ('ok', 'error', 'interrupted') group by 1, 2`);
    await client.query('delete from usage_totals');
    await client.query(`insert into usage_totals (shard, input_tokens, output_tokens, cost_usd) select 0, coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cost_usd), 0) from model_usage`);
    await client.query('commit');
    for (const t of RUN_COUNT_TRIGGERS) await client.query(`alter table runs enable trigger ${t}`);
    await client.query('alter table model_usage enable trigger model_usage_totals');
    await client.query('vacuum analyze');
  } finally {
    await client.end();
  }
}
