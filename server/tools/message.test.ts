// The message tool with a realistic call context: agent from the session key, mirror into the target (never the sender), budget, data errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannels, deliveryKey, type ChannelService } from '../channels';
import { CREDS, FAKES } from '../channels/testing/fake-apis';
import { startFakePlatform, type FakePlatform } from '../channels/testing/fake-platform';
import { startTestServer, type TestServer } from '../testing/harness';
import { createMessageTool, OUTBOUND_COUNTER } from './message';
import type { ToolCallContext } from './types';

let s: TestServer;
let tg: FakePlatform;
let slack: FakePlatform;
let channels: ChannelService;
let tool: ReturnType<typeof createMessageTool>;

beforeAll(async () => {
  tg = await startFakePlatform(FAKES.telegram!.handler);
  slack = await startFakePlatform(FAKES.slack!.handler);
  s = await startTestServer({
    config: {
      agents: [{ id: 'main' }, { id: 'writer', limits: { outboundPerRun: 2 } }],
      channels: {
        telegram: { botToken: CREDS.telegramToken, apiBaseUrl: tg.url },
        slack: { botToken: CREDS.slackToken, apiBaseUrl: `${slack.url}/api/` },
      },
    },
  });
  channels = createChannels({ config: s.rt.config, store: s.rt.store, bus: s.rt.bus, orchestrator: s.rt.orchestrator, log: s.rt.log });
  tool = createMessageTool(channels);
});
afterAll(async () => {
  await new Promise((r) => setImmediate(r));
  await s?.close();
  await tg?.close();
  await slack?.close();
});

function ctx(sessionKey: string, o: Partial<ToolCallContext> = {}): ToolCallContext {
  const agentId = sessionKey.split(':')[1]!;
  return { runId: `run_${Math.random().toString(36).slice(2)}`, sessionKey, agent: s.rt.orchestrator.agent(agentId)!, callId: 'call_1', signal: new AbortController().signal, counters: new Map(), delivered: new Set(), ...o };
}
const history = async (sessionKey: string) => (await s.rpc<{ messages: any[] }>('chat.history', { sessionKey }).catch(() => ({ messages: [] as any[] }))).messages;

describe('message tool', () => {
  it('validates its input with zod (action must be send)', () => {
    expect(tool.inputSchema.safeParse({ action: 'send', channel: 'telegram', to: '1', text: 'x' }).success).toBe(true);
    expect(tool.inputSchema.safeParse({ action: 'delete', channel: 'telegram', to: '1', text: 'x' }).success).toBe(false);
    expect(tool.inputSchema.safeParse({ action: 'send', channel: 'telegram', to: '1' }).success).toBe(false);
  });

  it("derives the agent from the session key and mirrors into the target's session, creating it; never into the sender's", async () => {
    await s.rt.store.ensureSession({ key: 'agent:writer:main', agentId: 'writer', kind: 'main' });
    const c = ctx('agent:writer:main');
    const out = await tool.execute({ action: 'send', channel: 'telegram', to: '4242', text: 'Draft is ready.' }, c);
    expect(out).toEqual({ status: 'ok', messageId: expect.any(String), sessionKey: 'agent:writer:telegram:direct:4242', channel: 'telegram', to: '4242', deliveryId: expect.stringMatching(/^dlv_/) });
    expect(tg.requests.at(-1)!.body).toEqual({ chat_id: 4242, text: 'Draft is ready.' });

    const target = await history('agent:writer:telegram:direct:4242');
    expect(target).toHaveLength(1);
    expect(target[0]).toMatchObject({ role: 'assistant', kind: 'mirror', content: 'Draft is ready.', runId: c.runId, author: { type: 'agent', id: 'writer' }, meta: { via: 'message', sourceSessionKey: 'agent:writer:main' } });
    expect(await s.rt.store.getSession('agent:writer:telegram:direct:4242')).toMatchObject({ agent_id: 'writer', kind: 'channel' });
    expect((await history('agent:writer:main')).filter((m) => m.kind === 'mirror')).toHaveLength(0);
  });

  it('the agent comes from ctx.sessionKey, not from anything the model passes', async () => {
    // ctx.agent is main's config, but the calling session is writer's: the target session is writer's.
    const out = await tool.execute({ action: 'send', channel: 'telegram', to: '4243', text: 'whose?' }, { ...ctx('agent:writer:main'), agent: s.rt.orchestrator.agent('main')! });
    expect(out).toMatchObject({ status: 'ok', sessionKey: 'agent:writer:telegram:direct:4243' });
  });

  it('limits outbound messages per run (outboundPerRun) with rate_limited, counted across calls of the run', async () => {
    const c = ctx('agent:writer:main');
    const send = (n: number) => tool.execute({ action: 'send', channel: 'telegram', to: '5000', text: `n${n}` }, c);
    expect(await send(1)).toMatchObject({ status: 'ok' });
    expect(await send(2)).toMatchObject({ status: 'ok' });
    const before = tg.requests.length;
    expect(await send(3)).toEqual({ status: 'error', error: { code: 'rate_limited', message: expect.stringContaining('2 channel messages per run') } });
    expect(tg.requests.length).toBe(before);
    expect(c.counters.get(OUTBOUND_COUNTER)).toBe(2);
    // a new run has a fresh budget; the default budget is 10
    const main = ctx('agent:main:main');
    for (let i = 0; i < 10; i++) expect(await tool.execute({ action: 'send', channel: 'webchat', to: 'u', text: `m${i}` }, main)).toMatchObject({ status: 'ok' });
    expect(await tool.execute({ action: 'send', channel: 'webchat', to: 'u', text: 'm10' }, main)).toMatchObject({ status: 'error', error: { code: 'rate_limited' } });
  });

  it('answers refusals as data: unknown channel, bad target, failed delivery (nothing mirrored)', async () => {
    const c = ctx('agent:main:main');
    expect(await tool.execute({ action: 'send', channel: 'myspace', to: 'x', text: 'hi' }, c)).toMatchObject({ status: 'error', error: { code: 'unknown_channel' } });
    expect(await tool.execute({ action: 'send', channel: 'telegram', to: 'nobody', text: 'hi' }, c)).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    tg.enqueue({ ...FAKES.telegram!.serverError, match: /sendMessage/ });
    const failed = (await tool.execute({ action: 'send', channel: 'telegram', to: '6006', text: 'lost' }, c)) as { deliveryId?: string };
    expect(failed).toMatchObject({ status: 'error', error: { code: 'channel_error', message: expect.stringContaining('Bad Gateway') } });
    expect(await history('agent:main:telegram:direct:6006')).toHaveLength(0);
    // The failure names its delivery record, which is there to be retried (probe H; refusals before a send make none).
    expect(failed.deliveryId).toMatch(/^dlv_/);
    expect(await s.rpc('deliveries.get', { deliveryId: failed.deliveryId })).toMatchObject({ deliveryId: failed.deliveryId, kind: 'channel' });
    expect(await tool.execute({ action: 'send', channel: 'myspace', to: 'x', text: 'hi' }, c)).not.toHaveProperty('deliveryId');
  });

  it('Slack: a send to the channel the run is answering in a thread stays in that thread (ids matched case-insensitively)', async () => {
    const c = ctx('agent:main:slack:channel:c0abc:thread:1700000000.000100', { origin: { channel: { id: 'slack', to: 'C0ABC', threadId: '1700000000.000100' } } });
    const out = await tool.execute({ action: 'send', channel: 'slack', to: 'c0abc', text: 'same thread' }, c);
    expect(out).toMatchObject({ status: 'ok', sessionKey: 'agent:main:slack:channel:c0abc:thread:1700000000.000100', threadId: '1700000000.000100' });
    expect(slack.requests.at(-1)!.body).toMatchObject({ channel: 'C0ABC', thread_ts: '1700000000.000100', text: 'same thread' });
    // another channel is not pulled into the thread
    const other = await tool.execute({ action: 'send', channel: 'slack', to: 'C0OTHER', text: 'elsewhere' }, c);
    expect(other).toMatchObject({ sessionKey: 'agent:main:slack:channel:c0other' });
    // the run's final reply with the same text will not be delivered a second time
    expect(channels.deliveredBy(c.runId).has(deliveryKey('slack', 'C0ABC', '1700000000.000100', 'same thread'))).toBe(true);
    // …and, the target being the run's own session, the final-reply rule knows it was delivered
    expect(c.delivered.has('same thread')).toBe(true);
    expect(c.delivered.has('elsewhere')).toBe(false);
  });
});
