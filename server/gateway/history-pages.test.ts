// chat.history pages hold at most HISTORY_PAGE_CHARS of text: big rows come over several pages, each row once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { HISTORY_PAGE_CHARS } from './service';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

describe('chat.history pages of big rows', () => {
  it('a page stops at the text cap (one row at least), and its cursor goes on without a gap or a repeat', async () => {
    const key = 'agent:main:history-big';
    const big = 'x'.repeat(200_000);
    for (let i = 0; i < 15; i++) {
      const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: `/reply ${i} ${big}` });
      await s.rpc('agent.wait', { runId });
    }
    type Page = { messages: Array<{ id: number; content: string }>; next_cursor: string | null };
    const first = await s.rpc<Page>('chat.history', { sessionKey: key, limit: 200 });
    const all = (await s.rt.store.history({ sessionKey: key, limit: 1000, includeTools: false })).map((r) => r.id);
    expect(all.length).toBeGreaterThanOrEqual(30); // 30 rows of ~200 KB (6 MB) or more
    // Before: all of them in one page.
    expect(first.messages.length).toBeLessThan(all.length);
    expect(first.messages.reduce((n, m) => n + m.content.length, 0)).toBeLessThanOrEqual(HISTORY_PAGE_CHARS);
    expect(first.next_cursor).toEqual(expect.any(String));
    const ids = first.messages.map((m) => m.id);
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await s.rpc<Page>('chat.history', { sessionKey: key, limit: 200, cursor });
      ids.push(...page.messages.map((m) => m.id));
      cursor = page.next_cursor;
    }
    expect(ids).toEqual(all);
    // Small rows still come 200 to a page.
    const small = 'agent:main:history-small';
    for (let i = 0; i < 3; i++) await s.rpc('agent.wait', { runId: (await s.rpc<{ runId: string }>('agent', { sessionKey: small, message: `hi ${i}` })).runId });
    const p = await s.rpc<Page>('chat.history', { sessionKey: small, limit: 200 });
    expect(p.messages).toHaveLength(6);
    expect(p.next_cursor).toBeNull();
  });
});
