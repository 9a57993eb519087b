// Unit tests for the sidebar's paging, filtering, grouping, unread and j/k helpers.
import { describe, expect, it } from 'vitest';
import type { SessionSummary } from '@/lib/trpc/types';
import { filterSessions, flattenSessionPages, groupByAgent, isUnread, nestDelegates, stepSession, treeOrder } from './sidebar';

const s = (sessionKey: string, kind: SessionSummary['kind'], lastActivityAt: string, extra: Partial<SessionSummary> = {}): SessionSummary => ({
  sessionKey,
  agentId: sessionKey.split(':')[1]!,
  kind,
  model: 'scripted',
  lastActivityAt,
  status: 'idle',
  messageCount: 2,
  ...extra,
});

const all = [
  s('agent:main:main', 'main', '2024-01-01T00:00:03Z'),
  s('agent:researcher:subagent:x', 'subagent', '2024-01-01T00:00:05Z'),
  s('agent:main:telegram:direct:bob', 'channel', '2024-01-01T00:00:01Z', { label: 'Bob' }),
  s('agent:writer:main', 'main', '2024-01-01T00:00:02Z'),
];

describe('sidebar helpers', () => {
  it('filters by kind and search', () => {
    expect(filterSessions(all, [], '').length).toBe(4);
    expect(filterSessions(all, ['delegate'], '').map((x) => x.sessionKey)).toEqual(['agent:researcher:subagent:x']);
    expect(filterSessions(all, ['main', 'channel'], '').length).toBe(3);
    expect(filterSessions(all, [], 'bob').map((x) => x.kind)).toEqual(['channel']);
    expect(filterSessions(all, [], 'WRITER').length).toBe(1);
  });

  it('groups by agent in config order, newest first', () => {
    const groups = groupByAgent(all, ['main', 'researcher', 'writer']);
    expect(groups.map((g) => g.agentId)).toEqual(['main', 'researcher', 'writer']);
    expect(groups[0]!.sessions.map((x) => x.sessionKey)).toEqual(['agent:main:main', 'agent:main:telegram:direct:bob']);
  });

  it('steps through sessions without wrapping', () => {
    const order = ['a', 'b', 'c'];
    expect(stepSession(order, 'a', 1)).toBe('b');
    expect(stepSession(order, 'c', 1)).toBe('c');
    expect(stepSession(order, 'a', -1)).toBe('a');
    expect(stepSession(order, 'zz', 1)).toBe('a');
    expect(stepSession([], 'a', 1)).toBeUndefined();
  });

  it('flags unread only for sessions seen before', () => {
    const x = all[0]!;
    expect(isUnread(x, {}, '')).toBe(false);
    expect(isUnread(x, { [x.sessionKey]: 1 }, '')).toBe(true);
    expect(isUnread(x, { [x.sessionKey]: 1 }, x.sessionKey)).toBe(false);
  });
});

describe('flattenSessionPages', () => {
  it('joins loaded pages newest first, one row per session, the newest summary winning', () => {
    const moved = s('agent:main:moved', 'other', '2024-01-01T00:00:09Z', { messageCount: 7 });
    const pages = [
      { sessions: [moved, all[1]!, all[0]!] },
      // Loaded before `moved` had new activity: its stale summary from the older page is dropped.
      { sessions: [all[3]!, s('agent:main:moved', 'other', '2024-01-01T00:00:00Z'), all[2]!] },
    ];
    const out = flattenSessionPages(pages);
    expect(out.map((x) => x.sessionKey)).toEqual([
      'agent:main:moved',
      'agent:researcher:subagent:x',
      'agent:main:main',
      'agent:writer:main',
      'agent:main:telegram:direct:bob',
    ]);
    expect(out[0]!.messageCount).toBe(7);
    expect(flattenSessionPages(undefined)).toEqual([]);
    expect(flattenSessionPages([{ sessions: [] }])).toEqual([]);
  });
});

describe('patchSessionStatus', () => {
  const summary = (sessionKey: string, status: 'idle' | 'running' = 'idle') => ({ sessionKey, agentId: 'main', kind: 'main' as const, model: 'scripted', lastActivityAt: '2026-01-01T00:00:00.000Z', status, messageCount: 1 });
  it('changes only that session, keeps the rest by identity, and returns the same object when the session is not listed', async () => {
    const { patchSessionStatus } = await import('./sidebar');
    const other = { sessions: [summary('agent:main:b')], next_cursor: null };
    const data = { pages: [{ sessions: [summary('agent:main:a'), summary('agent:main:c')], next_cursor: 'x' }, other], pageParams: [undefined, 'x'] };
    const next = patchSessionStatus(data, 'agent:main:c', 'running', '2026-02-01T00:00:00.000Z')!;
    expect(next.pages[0]!.sessions.map((s) => s.status)).toEqual(['idle', 'running']);
    expect(next.pages[0]!.sessions[1]!.lastActivityAt).toBe('2026-02-01T00:00:00.000Z');
    expect(next.pages[1]).toBe(other);
    expect(patchSessionStatus(data, 'agent:main:zzz', 'running', '2026-02-01T00:00:00.000Z')).toBe(data);
  });
});

describe('nestDelegates (the sidebar tree)', () => {
  const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, '0')}.000Z`;
  const sess = (sessionKey: string, n: number, parentKey?: string) =>
    ({ sessionKey, agentId: sessionKey.split(':')[1]!, kind: sessionKey.includes(':subagent:') ? 'subagent' : 'main', model: 'scripted', lastActivityAt: at(n), status: 'idle', messageCount: 1, ...(parentKey ? { parentKey } : {}) }) as SessionSummary;

  it('puts a delegate under its parent, whatever its agent, and walks depth first', () => {
    const main = sess('agent:main:main', 1);
    const child = sess('agent:researcher:subagent:a', 5, 'agent:main:main');
    const grandchild = sess('agent:writer:subagent:b', 4, 'agent:researcher:subagent:a');
    const orphan = sess('agent:writer:subagent:c', 3, 'agent:main:gone');
    const other = sess('agent:writer:main', 2);
    const trees = nestDelegates(groupByAgent([main, child, grandchild, orphan, other], ['main', 'researcher', 'writer']));
    expect(trees.map((t) => [t.agentId, t.roots.map((r) => r.session.sessionKey)])).toEqual([
      ['main', ['agent:main:main']],
      ['researcher', []],
      ['writer', ['agent:writer:subagent:c', 'agent:writer:main']],
    ]);
    expect(trees[0]!.roots[0]!.children.map((c) => c.session.sessionKey)).toEqual(['agent:researcher:subagent:a']);
    expect(trees[0]!.roots[0]!.children[0]!.children.map((c) => c.session.sessionKey)).toEqual(['agent:writer:subagent:b']);
    expect(treeOrder(trees)).toEqual(['agent:main:main', 'agent:researcher:subagent:a', 'agent:writer:subagent:b', 'agent:writer:subagent:c', 'agent:writer:main']);
  });

  it("nests a delegate under a parent that came with the page's parents, not on a page of its own", () => {
    const parent = sess('agent:main:old', 1);
    const child = sess('agent:researcher:subagent:p', 9, 'agent:main:old');
    const fresh = sess('agent:main:new', 8);
    // Before: only the pages' sessions were flattened, and the delegate stayed a root of researcher's group.
    const flat = flattenSessionPages([{ sessions: [child, fresh], parents: [parent] }]);
    // Once a page holds it as well, it is there once.
    expect(flattenSessionPages([{ sessions: [child, fresh], parents: [parent] }, { sessions: [parent] }])).toEqual(flat);
    expect(flat.map((x) => x.sessionKey)).toEqual(['agent:researcher:subagent:p', 'agent:main:new', 'agent:main:old']);
    const trees = nestDelegates(groupByAgent(flat, ['main', 'researcher']));
    expect(trees.map((t) => [t.agentId, t.roots.map((r) => r.session.sessionKey)])).toEqual([
      ['main', ['agent:main:new', 'agent:main:old']],
      ['researcher', []],
    ]);
    expect(treeOrder(trees)).toEqual(['agent:main:new', 'agent:main:old', 'agent:researcher:subagent:p']);
  });

  it('survives a parent cycle in bad data', () => {
    const a = sess('agent:main:subagent:a', 1, 'agent:main:subagent:b');
    const b = sess('agent:main:subagent:b', 2, 'agent:main:subagent:a');
    const order = treeOrder(nestDelegates(groupByAgent([a, b], ['main'])));
    expect(order.sort()).toEqual(['agent:main:subagent:a', 'agent:main:subagent:b']);
  });
});
