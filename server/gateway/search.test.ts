// sessions.search over real HTTP on the real store (SQLite FTS5, or PostgreSQL full text with TEST_STORE=postgres).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RANK_WINDOW } from '../store/search';
import { startTestServer, type TestServer, until } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { agents: [{ id: 'main' }, { id: 'ops', tools: { exec: 'auto' } }] } });
  const runs = [
    await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:s1', message: '/reply the quokka sleeps at noon' }),
    await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:ops:s2', message: '/tool exec {"command":"printf \'first line\\\\nwombat burrow\\\\n\'"}' }),
    await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:s3', message: 'tell me about wombats and a quokka' }),
  ];
  for (const r of runs) await s.rpc('agent.wait', { runId: r.runId });
});
afterAll(async () => {
  await s?.close();
});

type Result = { sessionKey: string; messageId: number; role: string; kind: string; snippet: string; createdAt: string };
const search = (params: Record<string, unknown>) => s.rpc<{ results: Result[]; next_cursor: string | null }>('sessions.search', params);
const call = (params: unknown) => s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.search', params });

describe('sessions.search', () => {
  it('finds words inside a tool result (JSON syntax is not part of the words) and names the row', async () => {
    const r = await search({ query: 'wombat' });
    const hit = r.results.find((x) => x.kind === 'tool_result');
    expect(hit).toMatchObject({ sessionKey: 'agent:ops:s2', role: 'tool', kind: 'tool_result' });
    expect(hit!.snippet).toContain('wombat burrow');
    expect(hit!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    const page = await s.rpc<{ messages: Array<{ id: number; kind: string }> }>('chat.history', { sessionKey: 'agent:ops:s2', includeTools: true });
    expect(page.messages.find((m) => m.id === hit!.messageId)?.kind).toBe('tool_result');
  });

  it('finds the words inside paths, URLs, host names, e-mail addresses and tags, on both stores', async () => {
    const text = 'read /etc/zqhosts then https://zqsite.example/zqdocs/page?x=zqarg and src/zqwidget.ts, mail zquser@zqmail.example, <zqtag> v1.2.zqver';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:paths', message: text });
    await s.rpc('agent.wait', { runId });
    // Before, on PostgreSQL: none of these (its parser kept `/etc/zqhosts`, the URL, the host, the address as whole tokens).
    for (const word of ['zqhosts', 'zqsite', 'zqdocs', 'zqarg', 'zqwidget', 'zquser', 'zqmail', 'zqtag', 'zqver', 'zqwidget ts', 'zqsite.example']) {
      await until(async () => (await search({ query: word })).results.some((r) => r.sessionKey === 'agent:main:paths'), 10_000).catch(() => {
        throw new Error(`"${word}" not found`);
      });
    }
    // The snippet shows the match, also when it sits in a tag, in code with < and >, or in a URL far into the text.
    // Before, on PostgreSQL: "the element is deprecated", "if (a d) return", the text's first words.
    const filler = Array.from({ length: 120 }, (_, i) => `filler${i}`).join(' ');
    for (const [message, word] of [['the <zqsnipa> element is deprecated', 'zqsnipa'], ['if (a<b && zqsnipb>d) return x&amp;y;', 'zqsnipb'], [`${filler} https://zqfar.example.com/zqsnipc/path`, 'zqsnipc']]) {
      const { runId: r } = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:snippets', message });
      await s.rpc('agent.wait', { runId: r });
      const hit = await until(async () => (await search({ query: word })).results.find((x) => x.kind === 'message' && x.sessionKey === 'agent:main:snippets'), 10_000);
      expect(hit.snippet.toLowerCase(), word).toContain(word);
    }
  });

  it('needs every word, takes the last one as a prefix, ranks, filters by agent and pages without repeats', async () => {
    const both = await search({ query: 'quokka wombat' });
    expect(new Set(both.results.map((x) => x.sessionKey))).toEqual(new Set(['agent:main:s3']));
    const prefix = await search({ query: 'quok' });
    expect(new Set(prefix.results.map((x) => x.sessionKey))).toEqual(new Set(['agent:main:s1', 'agent:main:s3']));
    // Both agents have wombat hits: the filter keeps exactly the named agent's (an empty answer would not pass).
    expect(new Set((await search({ query: 'wombat', agentId: 'ops' })).results.map((x) => x.sessionKey))).toEqual(new Set(['agent:ops:s2']));
    expect(new Set((await search({ query: 'wombat', agentId: 'main' })).results.map((x) => x.sessionKey))).toEqual(new Set(['agent:main:s3']));
    const all = (await search({ query: 'quokka' })).results.map((x) => x.messageId);
    const first = await search({ query: 'quokka', limit: 1 });
    expect(first.next_cursor).toBeTruthy();
    const rest = await search({ query: 'quokka', limit: 200, cursor: first.next_cursor });
    expect([...first.results, ...rest.results].map((x) => x.messageId)).toEqual(all);
    expect(rest.next_cursor).toBeNull();
  });

  it('treats the query as words, never as engine syntax', async () => {
    expect((await search({ query: '"quokka* ( -:' })).results.length).toBeGreaterThan(0);
    expect((await search({ query: '***' })).results).toEqual([]);
    expect((await search({ query: 'zzzznotthere' })).results).toEqual([]);
  });

  it('validates params and cursors (CONTRACT §3)', async () => {
    expect((await call({})).body.error).toMatchObject({ code: -32602 });
    expect((await call({ query: 'x', limit: 0 })).body.error).toMatchObject({ code: -32602 });
    const other = await s.rpc<{ next_cursor: string | null }>('sessions.list', { limit: 1 });
    expect((await call({ query: 'quokka', cursor: other.next_cursor })).body.error).toMatchObject({ code: -32602, data: { code: 'invalid_cursor' } });
    expect((await call({ query: 'quokka', cursor: '!!' })).body.error).toMatchObject({ data: { code: 'invalid_cursor' } });
    // Forged cursors of the right list and scope, whose offset or id is not one: invalid_cursor, never internal.
    const genuine = (await search({ query: 'quokka', limit: 1 })).next_cursor!;
    const { s: scope, k: [, upTo] } = JSON.parse(Buffer.from(genuine, 'base64url').toString('utf8')) as { s: string; k: [number, number] };
    const forge = (k: unknown[]) => Buffer.from(JSON.stringify({ l: 'search', s: scope, k }), 'utf8').toString('base64url');
    for (const k of [[-1, upTo], [1.5, upTo], ['10', upTo], [1e300, upTo], [null, upTo], [{}, upTo], [1], [1, 0], [1, -1], [1, 'x']]) {
      expect({ k, error: (await call({ query: 'quokka', cursor: forge(k) })).body.error }).toMatchObject({ k, error: { code: -32602, data: { code: 'invalid_cursor' } } });
    }
    // The genuine one still pages.
    expect((await call({ query: 'quokka', cursor: forge([1, upTo]) })).body.result.results.length).toBeGreaterThan(0);
  });

  it("a page after rows were added neither repeats nor skips the first page's matches", async () => {
    const ask = async (key: string, message: string) => s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: key, message })).runId });
    for (let i = 0; i < 4; i++) await ask('agent:main:pages-held', `/reply okapi number ${i}`);
    const all = async (): Promise<number[]> => (await search({ query: 'okapi', limit: 100 })).results.map((r) => r.messageId);
    const before = await until(async () => ((await all()).length >= 8 ? all() : undefined));
    const first = await search({ query: 'okapi', limit: 3 });
    for (let i = 0; i < 2; i++) await ask('agent:main:pages-held', `/reply okapi again ${i}`);
    const walked = first.results.map((r) => r.messageId);
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await search({ query: 'okapi', limit: 3, cursor });
      walked.push(...page.results.map((r) => r.messageId));
      cursor = page.next_cursor;
    }
    // Before: 12 hits with 3 ids twice (an offset into a ranking that the new rows had moved).
    expect(walked.sort()).toEqual([...before].sort());
    expect((await all()).length).toBe(12); // a new search sees the new rows
  });

  it('a long query pages: its cursor stays within what a cursor may be (2048)', async () => {
    await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:long-query', message: '/reply élan élan' })).runId });
    await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:long-query', message: '/reply élan again' })).runId });
    const query = `${'"'.repeat(1000)} élan`;
    const first = await until(async () => {
      const r = await search({ query, limit: 1 });
      return r.next_cursor ? r : undefined;
    });
    // Before: a 2,715-character cursor that the server itself refused (invalid_cursor, "Too big").
    expect(first.next_cursor!.length).toBeLessThanOrEqual(2048);
    expect((await call({ query, limit: 1, cursor: first.next_cursor })).body.result.results.length).toBe(1);
  });

  it('ranks among the newest RANK_WINDOW matches on both stores (a common word never ranks every match)', async () => {
    // An old message that ranks best ("gnu" three times), then RANK_WINDOW newer ones with "gnu" once, in a session that exists.
    await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:herd', message: 'hello herd' })).runId });
    const db = s.rt.store.db;
    const row = (content: string) => sql`(session_key, role, kind, content, created_at, author_type, author_id) values ('agent:main:herd', 'user', 'message', ${content}, '2026-01-01T00:00:00.000Z', 'user', 'user')`;
    await sql`insert into messages ${row('gnu gnu gnu in the old days')}`.execute(db);
    await sql`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${RANK_WINDOW})
      select 'agent:main:herd', 'user', 'message', 'a gnu passes by', '2026-01-02T00:00:00.000Z', 'user', 'user' from n`.execute(db);
    const top = await search({ query: 'gnu', limit: 5 });
    expect(top.results).toHaveLength(5);
    for (const r of top.results) expect(r.snippet).toBe('a gnu passes by');
    // A rarer word still finds the old row, best first.
    await sql`insert into messages ${row('one gnu and a yak')}`.execute(db);
    expect((await search({ query: 'gnu yak' })).results.map((r) => r.snippet)).toEqual(['one gnu and a yak']);
  });

  it('ranks a whole-word match above the prefix’s completions, on both stores, also when newer completions fill the window', async () => {
    // The typed word once, in an old message; 70 newer messages with its completions (zqmark70…): before, bm25 /
    // ts_rank scored them all as one word and the exact hit came last (newest first among equals), past a page of 20.
    const ask = async (key: string, message: string) => s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: key, message })).runId });
    await ask('agent:main:zq-exact', '/reply zqmark7');
    for (let i = 0; i < 7; i++) await ask(`agent:main:zq-more-${i}`, `/reply ${Array.from({ length: 10 }, (_, j) => `zqmark7${i}${j}`).join(' ')}`);
    // Rows of sessions that exist (a deleted session's rows are no hits).
    for (const key of ['agent:main:zq-near', 'agent:main:zq-flood']) await ask(key, '/reply hello');
    const db = s.rt.store.db;
    await sql`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
      with recursive n(i) as (select 0 union all select i + 1 from n where i < 69)
      select 'agent:main:zq-near', 'user', 'message', 'zqmark7' || i, '2026-01-03T00:00:00.000Z', 'user', 'user' from n`.execute(db);
    const first = await until(async () => {
      const r = await search({ query: 'zqmark7', limit: 20 });
      return r.results.length === 20 ? r : undefined;
    }, 10_000);
    expect(first.results[0]).toMatchObject({ sessionKey: 'agent:main:zq-exact', role: 'assistant' });
    expect(first.results[0]!.snippet).toBe('zqmark7');
    // The same word after RANK_WINDOW newer messages of one completion: the exact hit is still first.
    await sql`insert into messages (session_key, role, kind, content, created_at, author_type, author_id)
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${RANK_WINDOW})
      select 'agent:main:zq-flood', 'user', 'message', 'a zqmark7x passes', '2026-01-04T00:00:00.000Z', 'user', 'user' from n`.execute(db);
    const flooded = await until(async () => {
      const r = await search({ query: 'zqmark7', limit: 5 });
      return r.results.some((x) => x.sessionKey === 'agent:main:zq-flood') ? r : undefined;
    }, 10_000);
    expect(flooded.results[0]).toMatchObject({ sessionKey: 'agent:main:zq-exact' });
    // A prefix that is no word of its own ranks as before: the completions, best first.
    expect((await search({ query: 'zqmar', limit: 3 })).results).toHaveLength(3);
  });

  it('forgets a deleted transcript', async () => {
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:gone', message: '/reply platypus' });
    await s.rpc('agent.wait', { runId: r.runId });
    expect((await search({ query: 'platypus' })).results.length).toBeGreaterThan(0);
    await s.rpc('sessions.delete', { sessionKey: 'agent:main:gone', deleteTranscript: true });
    expect((await search({ query: 'platypus' })).results).toEqual([]);
  });

  it('finds nothing in a deleted session whose transcript was kept (the session it would open is gone)', async () => {
    const r = await s.rpc<{ runId: string }>('agent', { sessionKey: 'agent:main:gone-kept', message: '/reply zorillo' });
    await s.rpc('agent.wait', { runId: r.runId });
    expect((await search({ query: 'zorillo' })).results.length).toBeGreaterThan(0);
    await s.rpc('sessions.delete', { sessionKey: 'agent:main:gone-kept' });
    // Before: its rows were hits, and opening one answered unknown_session.
    expect((await search({ query: 'zorillo' })).results).toEqual([]);
  });
});
