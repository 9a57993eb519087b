// The status writes an MCP call's elicitation and authorization items make are fenced by the session's lease: a zombie
// (a process that lost the lease, still running the call) cannot set an ended run back to waiting_approval or running.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness';
import { onPostgresPass } from '../testing/store-under-test';
import { FencedError } from '../store/store';
import type { McpCallInfo } from './call-info';
import { Elicitations } from './elicitation';
import { McpOAuth } from './oauth';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

/** A finished run on its own session, and a call of it as the MCP modules see it. */
async function endedRun(key: string): Promise<McpCallInfo> {
  const r = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: 'hi' });
  expect(await s.rpc('agent.wait', { runId: r.runId })).toMatchObject({ status: 'ok' });
  return { runId: r.runId, sessionKey: key, callId: 'call_mcp', tool: 'ask', signal: new AbortController().signal };
}

/**
 * Another process takes the session over: a new epoch and that process as its owner (so this process's orphan sweep,
 * which claims unowned sessions with unfinished runs, cannot claim it back under a fresh fence meanwhile).
 */
const takeOver = (key: string) => sql`update sessions set epoch = nextval('session_epochs'), owner = 'another-process' where key = ${key}`.execute(s.rt.store.db);

/** This process held the session's lease, then another process took it over (a new epoch): its fence is stale. */
async function takenOver(key: string): Promise<void> {
  const { store } = s.rt;
  store.setFence(key, Number((await store.getSession(key))!.epoch));
  await takeOver(key);
}

function oauthFor(call: McpCallInfo): McpOAuth {
  const { store, bus, log } = s.rt;
  return new McpOAuth({ server: 'fenced', url: 'http://127.0.0.1:9/mcp', store, bus, log, callbackUrl: 'http://127.0.0.1:9/api/mcp/oauth/callback', homeSession: 'agent:main:main', caller: () => call, toolName: (c) => `mcp__fenced__${c.tool}` });
}

describe.skipIf(!onPostgresPass())('PostgreSQL: an MCP call’s status writes under a lost lease', () => {
  it('an elicitation in a zombie is refused (FencedError) and leaves the ended run as it was', async () => {
    const key = 'agent:main:mcp-fence-elicit';
    const call = await endedRun(key);
    const before = (await s.rt.store.getRun(call.runId))!.status;
    await takenOver(key);
    try {
      // The run is live in this (zombie) process: its bus still knows it.
      s.rt.bus.registerRun(call.runId, key, 0);
      const asks = new Elicitations({ store: s.rt.store, bus: s.rt.bus, log: s.rt.log });
      await expect(asks.ask('fenced', 'mcp__fenced__ask', call, { message: 'name?', requestedSchema: { type: 'object', properties: {} } } as never, new AbortController().signal)).rejects.toBeInstanceOf(FencedError);
      expect(call.fenced).toBeInstanceOf(FencedError);
      expect((await s.rt.store.getRun(call.runId))!.status).toBe(before);
    } finally {
      s.rt.bus.unregisterRun(call.runId);
      s.rt.store.clearFence(key);
    }
  });

  it('an authorization item raised in a zombie: its status write is refused and the call throws FencedError', async () => {
    const key = 'agent:main:mcp-fence-oauth';
    const call = await endedRun(key);
    const before = (await s.rt.store.getRun(call.runId))!.status;
    await takenOver(key);
    try {
      await expect(oauthFor(call).redirectToAuthorization(new URL('http://127.0.0.1:9/authorize?state=st1'))).rejects.toBeInstanceOf(FencedError);
      expect((await s.rt.store.getRun(call.runId))!.status).toBe(before);
    } finally {
      s.rt.store.clearFence(key);
    }
  });

  it('an authorization settled after the lease was lost: the zombie does not set the ended run back to running', async () => {
    const { store } = s.rt;
    const key = 'agent:main:mcp-fence-oauth-done';
    const call = await endedRun(key);
    const ended = (await store.getRun(call.runId))!.status;
    // Raised while this process held the lease: the run waits on the item.
    store.setFence(key, Number((await store.getSession(key))!.epoch));
    const oauth = oauthFor(call);
    try {
      await oauth.redirectToAuthorization(new URL('http://127.0.0.1:9/authorize?state=st2'));
      expect((await store.getRun(call.runId))!.status).toBe('waiting_approval');
      const [item] = await store.pendingApprovals({ runId: call.runId });
      // Another process takes the session over and ends the run; then the person declines the item.
      await takeOver(key);
      await store.updateRun(call.runId, { status: ended });
      expect(await store.settleApproval(item!.id, 'denied', 'decline', 'no')).toBeTruthy();
      await expect(oauth.waitAuthorized()).rejects.toThrow(/declined/);
      expect((await store.getRun(call.runId))!.status).toBe(ended);
      expect(call.fenced).toBeInstanceOf(FencedError);
    } finally {
      store.clearFence(key);
    }
  });
});
