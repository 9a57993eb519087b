// Compaction on the scripted model: size trigger with the exact next prompt, a manual compact, busy refusal, a
// 10,000-row session that stays within its window, and the kept part that never loses an unanswered call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../events/types';
import { SCRIPTED_SUMMARY_LINES } from '../models/scripted-summary';
import { startTestServer, type TestServer, until } from '../testing/harness';
import { contextView, keptStart, renderRow } from './compaction';
import { SUMMARY_PREFIX, toPromptMessages, userMessage } from './context';

let s: TestServer;
const WINDOW = 6000;
beforeAll(async () => {
  s = await startTestServer({ config: { models: { scripted: { contextWindow: WINDOW } }, compaction: { threshold: 0.8, keepRecent: 4 } } });
});
afterAll(() => s.close());

const ask = async (sessionKey: string, message: string) => {
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey, message });
  return { runId, ...(await s.rpc<{ status: string; response?: string; usage?: { inputTokens: number } }>('agent.wait', { runId })) };
};
/** The largest prompt a run's model steps sent (the summarizer's calls, which agent.wait also counts, left out). */
const largestPrompt = async (runId: string) => {
  const r = await s.rt.store.db.selectFrom('model_usage').select((eb) => eb.fn.max<number>('input_tokens').as('m')).where('run_id', '=', runId).where('kind', '=', 'step').executeTakeFirst();
  return Number(r?.m ?? 0);
};
const compactionEvents = async (sessionKey: string) => {
  await s.rt.bus.drain();
  const rows = await s.rt.store.db.selectFrom('events').selectAll().where('session_key', '=', sessionKey).where('stream', '=', 'compaction').orderBy('id').execute();
  return rows.map((r) => JSON.parse(r.data) as { phase: string; tokensBefore: number; tokensAfter: number; through?: number });
};
const allRows = async (sessionKey: string) =>
  (await s.rt.store.db.selectFrom('messages').selectAll().where('session_key', '=', sessionKey).orderBy('id').execute()).map((r) => ({
    id: r.id,
    kind: r.kind,
    role: r.role,
    content: r.content,
  }));
const firstLine = (t: string) => {
  const l = t.trim().split(/\r?\n/, 1)[0] ?? '';
  return l.length > 120 ? `${l.slice(0, 120)}…` : l;
};
const expectedSummary = (rows: TranscriptMessage[]) => {
  const lines = rows.map((r) => `- ${firstLine(renderRow(r))}`);
  return [`Summary of ${rows.length} earlier messages:`, ...lines.slice(-SCRIPTED_SUMMARY_LINES)].join('\n');
};

describe('compaction', () => {
  it('compacts by size before a model step; the next prompt is exactly the summary plus the rows after it', async () => {
    const key = 'agent:main:compact-size';
    const filler = (i: number) => `note ${i}: ${'lorem ipsum dolor sit amet '.repeat(30)}`;
    let i = 0;
    for (; i < 60 && !(await compactionEvents(key)).some((e) => e.phase === 'end'); i++) {
      expect((await ask(key, filler(i))).status).toBe('ok');
    }
    const events = await compactionEvents(key);
    expect(events.map((e) => e.phase)).toEqual(['start', 'end']);
    // Each phase with tokensBefore and tokensAfter (CONTRACT §4); at the start nothing is compacted yet.
    expect(events[0]).toMatchObject({ tokensBefore: events[1]!.tokensBefore, tokensAfter: events[1]!.tokensBefore });
    const end = events[1]!;
    expect(end.tokensAfter).toBeLessThan(end.tokensBefore);
    expect(end.tokensBefore).toBeGreaterThan(WINDOW * 0.8);

    const rows = (await s.rt.store.history({ sessionKey: key, limit: 200, includeTools: true })).reverse();
    const summaryRow = rows.find((r) => r.kind === 'compaction')!;
    const meta = JSON.parse(summaryRow.meta!) as { through: number; tokensBefore: number; tokensAfter: number };
    expect(meta.through).toBe(end.through);
    expect(summaryRow.role).toBe('system');
    const summarized = (await import('../store/store')).toTranscriptMessage;
    const before = rows.filter((r) => r.id <= meta.through).map(summarized);
    expect(summaryRow.content).toBe(expectedSummary(before));
    // Kept: the newest keepRecent rows as they were when the step began (the run's own input is the last of them).
    const kept = rows.filter((r) => r.id > meta.through && r.kind !== 'compaction').map(summarized);
    expect(kept.slice(0, 4).map((r) => r.role)).toEqual(['assistant', 'user', 'assistant', 'user']);
    expect(kept[3]!.content).toBe(filler(i - 1));

    // What the next model step is sent: the summary, then every row after it, in order.
    const view = await contextView(s.rt.store, key, 200);
    expect(toPromptMessages(view.rows)).toEqual([
      userMessage(SUMMARY_PREFIX + summaryRow.content),
      ...kept.map((r) => (r.role === 'user' ? userMessage(r.content) : { role: 'assistant', content: [{ type: 'text', text: r.content }] })),
    ]);
    // The run that compacted still answered its message; history still has every row.
    expect((await s.rpc<{ messages: unknown[] }>('chat.history', { sessionKey: key, limit: 200 })).messages).toHaveLength(rows.length);
  });

  it('sessions.compact compacts now and answers tokens before and after; agent_busy while a run is active', async () => {
    const key = 'agent:main:compact-manual';
    for (let i = 0; i < 6; i++) await ask(key, `/reply line ${i}\n/reply second line ${i}`);
    const res = await s.rpc<{ status: string; tokensBefore: number; tokensAfter: number }>('sessions.compact', { sessionKey: key });
    expect(res.status).toBe('ok');
    expect(res.tokensAfter).toBeLessThan(res.tokensBefore);
    const rows = await allRows(key);
    const summary = rows.find((r) => r.kind === 'compaction')!;
    expect(summary.content.split('\n')[0]).toBe('Summary of 8 earlier messages:');
    expect(summary.content.split('\n')[1]).toBe('- [user] /reply line 0');
    expect(summary.content.split('\n')[2]).toBe('- [Main] line 0');
    expect((await compactionEvents(key)).map((e) => e.phase)).toEqual(['start', 'end']);
    // Nothing new to summarize: a second compact changes nothing.
    const again = await s.rpc<{ tokensBefore: number; tokensAfter: number }>('sessions.compact', { sessionKey: key });
    expect(again.tokensAfter).toBe(again.tokensBefore);
    expect((await allRows(key)).filter((r) => r.kind === 'compaction')).toHaveLength(1);
    // The session goes on from the summary.
    expect(await ask(key, 'after')).toMatchObject({ status: 'ok', response: 'echo: after' });

    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/sleep 5000' });
    const busy = await s.rpcRaw({ jsonrpc: '2.0', id: 1, method: 'sessions.compact', params: { sessionKey: key } });
    expect(busy.body.error).toMatchObject({ code: -32009, data: { code: 'agent_busy' } });
    await s.rpc('agent.cancel', { runId });
    const unknown = await s.rpcRaw({ jsonrpc: '2.0', id: 2, method: 'sessions.compact', params: { sessionKey: 'agent:main:nope' } });
    expect(unknown.body.error.data.code).toBe('unknown_session');
  });

  it('a session of 10,000 rows: its runs stay within the window', async () => {
    const key = 'agent:main:compact-10k';
    await s.rt.store.ensureSession({ key, agentId: 'main', kind: 'other' });
    const seed = Array.from({ length: 10_000 }, (_, i) => ({
      sessionKey: key,
      role: (i % 2 ? 'assistant' : 'user') as 'assistant' | 'user',
      kind: 'message' as const,
      content: `${i % 2 ? 'reply' : 'question'} ${i}: ${'words to fill the context '.repeat(4)}`,
      author: i % 2 ? { type: 'agent' as const, id: 'main', name: 'Main' } : { type: 'user' as const, id: 'user' },
    }));
    for (let i = 0; i < seed.length; i += 1000) await s.rt.store.appendMessages(seed.slice(i, i + 1000));
    const first = await ask(key, 'what did we say?');
    expect(first).toMatchObject({ status: 'ok', response: 'echo: what did we say?' });
    expect(await largestPrompt(first.runId)).toBeGreaterThan(0);
    expect(await largestPrompt(first.runId)).toBeLessThan(WINDOW * 0.8);
    // agent.wait counts the summarizer's calls too: they are this run's cost.
    expect(first.usage!.inputTokens).toBeGreaterThan(WINDOW);
    const events = await compactionEvents(key);
    expect(events.map((e) => e.phase)).toEqual(['start', 'end']);
    const summary = (await s.rt.store.db.selectFrom('messages').selectAll().where('session_key', '=', key).where('kind', '=', 'compaction').executeTakeFirstOrThrow()).content;
    expect(summary.split('\n')[0]).toBe('Summary of 9997 earlier messages:');
    expect(summary.split('\n')).toHaveLength(SCRIPTED_SUMMARY_LINES + 1);
    for (let i = 0; i < 3; i++) {
      const next = await ask(key, `and now ${i}?`);
      expect(next.status).toBe('ok');
      expect(next.usage!.inputTokens).toBe(await largestPrompt(next.runId));
      expect(next.usage!.inputTokens).toBeLessThan(WINDOW * 0.8);
    }
  });
});

describe('delegates', () => {
  it('a delegate session compacts the same way when its follow-up runs', async () => {
    const parent = 'agent:main:compact-delegate';
    const first = await ask(parent, '/tool delegate_agent {"agent_id":"researcher","prompt":"start"}');
    expect(first.status).toBe('ok');
    const child = (await s.rt.store.db.selectFrom('sessions').select('key').where('parent_key', '=', parent).executeTakeFirstOrThrow()).key;
    // A long history in the delegate's session, as months of follow-ups would leave it.
    await s.rt.store.appendMessages(
      Array.from({ length: 600 }, (_, i) => ({
        sessionKey: child,
        role: (i % 2 ? 'assistant' : 'user') as 'assistant' | 'user',
        kind: 'message' as const,
        content: `delegate turn ${i}: ${'some earlier research notes '.repeat(3)}`,
        author: i % 2 ? { type: 'agent' as const, id: 'researcher' } : { type: 'user' as const, id: 'user' },
      })),
    );
    const again = await ask(parent, `/tool delegate_agent ${JSON.stringify({ conversation_id: child, prompt: 'continue' })}`);
    expect(again.status).toBe('ok');
    expect((await compactionEvents(child)).map((e) => e.phase)).toEqual(['start', 'end']);
    const summary = await s.rt.store.db.selectFrom('messages').select('content').where('session_key', '=', child).where('kind', '=', 'compaction').executeTakeFirstOrThrow();
    // Its 2 first rows, 600 seeded, then the follow-up: all but the newest 4 are summarized.
    expect(summary.content.split('\n')[0]).toBe('Summary of 599 earlier messages:');
    expect(summary.content.split('\n').at(-1)).toMatch(/^- \[user\] delegate turn 596: some earlier research notes/);
    // The parent was not compacted: its own prompt is small.
    expect(await compactionEvents(parent)).toEqual([]);
  });
});

describe('the kept part', () => {
  const row = (id: number, kind: string, role: string, callId?: string): TranscriptMessage =>
    ({ id, sessionKey: 'k', role, kind, content: `r${id}`, createdAt: '', author: { type: 'user', id: 'u' }, runId: 'run', ...(callId ? { tool: { name: 't', callId, args: {}, result: null } } : {}) }) as TranscriptMessage;

  it('a model step with nothing to compact estimates its prompt once', async () => {
    const compactor = (s.rt as unknown as { compactor: { estimate: (...a: unknown[]) => unknown } }).compactor;
    const real = compactor.estimate;
    let calls = 0;
    compactor.estimate = function (this: unknown, ...a: unknown[]) {
      calls++;
      return real.apply(this, a);
    };
    try {
      const r = await ask('agent:main:estimate-once', 'hello');
      expect(r.status).toBe('ok');
      expect(calls).toBe(1);
    } finally {
      compactor.estimate = real;
    }
  });

  it('keeps the newest rows, widened to an unanswered call, a pending approval and whole call/result pairs', () => {
    const rows = [row(1, 'message', 'user'), row(2, 'tool_call', 'assistant', 'a'), row(3, 'tool_result', 'tool', 'a'), row(4, 'message', 'assistant'), row(5, 'message', 'user'), row(6, 'message', 'assistant')];
    expect(keptStart(rows, 2, new Set())).toBe(4); // the newest user message is kept
    expect(keptStart(rows, 3, new Set())).toBe(3);
    // a result kept pulls its call in
    expect(keptStart([...rows.slice(0, 3), row(7, 'message', 'user')], 2, new Set())).toBe(1);
    const unanswered = [row(1, 'message', 'user'), row(2, 'tool_call', 'assistant', 'x'), row(3, 'message', 'user'), row(4, 'message', 'assistant'), row(5, 'message', 'user')];
    expect(keptStart(unanswered, 1, new Set())).toBe(1);
    const pending = [row(1, 'message', 'user'), row(2, 'tool_call', 'assistant', 'p'), row(3, 'tool_result', 'tool', 'p'), row(4, 'message', 'user')];
    expect(keptStart(pending, 1, new Set(['p']))).toBe(1);
  });
});
