// Session routing: the seed's key cases (Slack thread, Telegram topic, dmScope + identityLinks with Discord) and each channel's target rules.
import { describe, expect, it } from 'vitest';
import { CrosstalkError } from '../errors';
import { createChannelRegistry } from './registry';
import { MAX_SESSION_KEY } from '../sessions/keys';
import { buildAgentSessionKey, keyPart, MAX_KEY_PART, resolveInboundSessionRoute, resolveOutboundSessionRoute } from './routing';
import type { InboundMessage } from './types';

const plugins = createChannelRegistry();
const session = { dmScope: 'per-channel-peer' as const, identityLinks: {} };
const key = (channel: string, to: string, extra: { threadId?: string; replyTo?: string; accountId?: string } = {}, s: typeof session | { dmScope: any; identityLinks: any } = session) =>
  resolveOutboundSessionRoute(plugins.get(channel)!, { to, ...extra }, { agentId: 'main', session: s }).route.sessionKey;

describe('seed cases', () => {
  it('Slack: threadId and replyTo add the thread suffix; channel ids match case-insensitively', () => {
    expect(key('slack', 'C0ABC', { threadId: '1700000000.000100' })).toBe('agent:main:slack:channel:c0abc:thread:1700000000.000100');
    expect(key('slack', 'channel:c0abc', { replyTo: '1700000000.000100' })).toBe('agent:main:slack:channel:c0abc:thread:1700000000.000100');
    expect(key('slack', 'slack:C0ABC')).toBe('agent:main:slack:channel:c0abc');
  });

  it('Telegram: a forum topic is <chatId>:topic:<id>, from threadId or the target itself', () => {
    expect(key('telegram', '-100123', { threadId: '42' })).toBe('agent:main:telegram:group:-100123:topic:42');
    expect(key('telegram', 'telegram:-100123:topic:42')).toBe('agent:main:telegram:group:-100123:topic:42');
    expect(key('telegram', '-100123')).toBe('agent:main:telegram:group:-100123');
    expect(key('telegram', '4242')).toBe('agent:main:telegram:direct:4242');
  });

  it('dmScope and identityLinks with Discord', () => {
    const links = { alice: ['discord:9001000001', 'telegram:4242'] };
    const at = (dmScope: string, to = 'user:9001000001', accountId?: string) => key('discord', to, accountId ? { accountId } : {}, { dmScope, identityLinks: links });
    expect(at('main')).toBe('agent:main:main');
    expect(at('per-peer')).toBe('agent:main:direct:alice');
    expect(at('per-channel-peer')).toBe('agent:main:discord:direct:alice');
    expect(at('per-account-channel-peer', 'user:9001000001', 'work')).toBe('agent:main:discord:work:direct:alice');
    expect(at('per-account-channel-peer')).toBe('agent:main:discord:default:direct:alice');
    // an unlinked user keeps its id; channels are never merged by identity links
    expect(at('per-peer', 'user:5555500000')).toBe('agent:main:direct:5555500000');
    expect(at('per-peer', 'channel:9001000001')).toBe('agent:main:discord:channel:9001000001');
    // the same person on Telegram lands in the same per-peer session
    expect(key('telegram', '4242', {}, { dmScope: 'per-peer', identityLinks: links })).toBe('agent:main:direct:alice');
  });

  it('Discord: a thread is its own channel (no suffix), matching inbound messages in the thread', () => {
    expect(key('discord', 'channel:123456789012345678', { threadId: '223456789012345678' })).toBe('agent:main:discord:channel:223456789012345678');
    const inbound: InboundMessage = { from: '1', peer: { kind: 'channel', id: '223456789012345678' }, text: 'x', replyTarget: { to: 'channel:223456789012345678' } };
    expect(resolveInboundSessionRoute(plugins.get('discord')!, inbound, { agentId: 'main', session }).sessionKey).toBe('agent:main:discord:channel:223456789012345678');
  });

  it('one builder both ways: an inbound Slack thread message and an outbound send to that thread share a key', () => {
    const inbound: InboundMessage = { from: 'U1', peer: { kind: 'channel', id: 'C0ABC' }, sessionThreadId: '1700000000.000100', text: 'x', replyTarget: { to: 'C0ABC' } };
    expect(resolveInboundSessionRoute(plugins.get('slack')!, inbound, { agentId: 'main', session }).sessionKey).toBe(key('slack', 'c0abc', { threadId: '1700000000.000100' }));
  });
});

describe('target rules per channel', () => {
  it.each([
    ['webchat', 'user:Browser-1', {}, 'agent:main:webchat:direct:browser-1'],
    ['webhook', 'group:Ops', { threadId: 't1' }, 'agent:main:webhook:group:ops:thread:t1'],
    ['webhook', 'u1', {}, 'agent:main:webhook:direct:u1'],
    ['slack', 'user:U123ABC', {}, 'agent:main:slack:direct:u123abc'],
    ['slack', '@U123ABC', {}, 'agent:main:slack:direct:u123abc'],
    ['slack', 'G0PRIV', {}, 'agent:main:slack:group:g0priv'],
    // A #name is a channel's name, whatever its letters (before: #general was taken for an id G…, a group; #design D…, a DM).
    ['slack', '#general', {}, 'agent:main:slack:channel:general'],
    ['slack', '#design', {}, 'agent:main:slack:channel:design'],
    ['slack', '#dev-team', {}, 'agent:main:slack:channel:dev-team'],
    ['discord', '<@!9001000001>', {}, 'agent:main:discord:direct:9001000001'],
    ['discord', '<#123456789012345678>', {}, 'agent:main:discord:channel:123456789012345678'],
    ['telegram', '@SomeChannel', {}, 'agent:main:telegram:channel:somechannel'],
    ['matrix', '!Room:Example.org', { threadId: '$Ev' }, 'agent:main:matrix:group:room:example.org:thread:-ev.dc5ab419a8ad'],
    ['matrix', '@bob:example.org', {}, 'agent:main:matrix:direct:bob:example.org'],
    ['msteams', '19:abc@thread.v2', {}, 'agent:main:msteams:group:19:abc-thread.v2.78b5a037edd2'],
    ['msteams', 'user:29:aad-1', {}, 'agent:main:msteams:direct:29:aad-1'],
    ['msteams', 'a:1dm', {}, 'agent:main:msteams:direct:a:1dm'],
    // Mattermost strips @ for DMs
    ['mattermost', '@Alice', {}, 'agent:main:mattermost:direct:alice'],
    ['mattermost', 'user:alice', {}, 'agent:main:mattermost:direct:alice'],
    ['mattermost', 'abcdefghijklmnopqrstuvwxyz', { replyTo: 'root1' }, 'agent:main:mattermost:channel:abcdefghijklmnopqrstuvwxyz:thread:root1'],
    // BlueBubbles strips chat_* prefixes
    ['bluebubbles', 'chat_guid:iMessage;+;chat123', {}, 'agent:main:bluebubbles:group:chat123'],
    ['bluebubbles', 'chat_identifier:chat123', {}, 'agent:main:bluebubbles:group:chat123'],
    ['bluebubbles', 'chat_id:chat123', {}, 'agent:main:bluebubbles:group:chat123'],
    ['bluebubbles', '+1 555 123 4567', {}, 'agent:main:bluebubbles:direct:+15551234567'],
    ['bluebubbles', 'iMessage;-;Bob@Example.com', {}, 'agent:main:bluebubbles:direct:bob-example.com.5ff860bf1190'],
    ['nextcloud-talk', 'room:AbCd1234', {}, 'agent:main:nextcloud-talk:group:abcd1234'],
    ['nextcloud-talk', 'user:carol', {}, 'agent:main:nextcloud-talk:direct:carol'],
    ['zalo', 'group:g77', {}, 'agent:main:zalo:group:g77'],
    ['zalo', '12345', {}, 'agent:main:zalo:direct:12345'],
    // Zalo Personal is a DM unless the target starts with group:
    ['zalouser', '99887766', {}, 'agent:main:zalouser:direct:99887766'],
    ['zalouser', 'group:55', {}, 'agent:main:zalouser:group:55'],
    ['zalouser', 'user:99887766', {}, 'agent:main:zalouser:direct:99887766'],
    ['nostr', 'npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6', {}, 'agent:main:nostr:direct:3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d'],
    ['tlon', '~Bus', {}, 'agent:main:tlon:direct:bus'],
    ['tlon', 'chat/~zod/general', {}, 'agent:main:tlon:group:zod-general.7955e9dabb8d'],
    ['voice', 'tel:+1 (555) 123-4567', {}, 'agent:main:voice:direct:+15551234567'],
  ])('%s %s → %s', (channel, to, extra, want) => {
    expect(key(channel, to, extra)).toBe(want);
  });

  it('voice keys are pinned to agent:<id>:voice:direct:<phone> whatever dmScope says, and take no identity link', () => {
    const s = { dmScope: 'main', identityLinks: { alice: ['voice:+15551234567'] } };
    expect(key('voice', '+15551234567', {}, s)).toBe('agent:main:voice:direct:+15551234567');
  });

  it.each([
    ['telegram', 'not-a-chat'],
    ['discord', 'general'],
    ['matrix', 'room-without-sigil'],
    ['mattermost', 'short'],
    ['nostr', 'npub1invalid'],
    ['voice', 'call me'],
    ['tlon', 'nope/nope/nope'],
  ])('%s refuses %s with invalid_request', (channel, to) => {
    expect(() => key(channel, to)).toThrow(CrosstalkError);
    try {
      key(channel, to);
    } catch (e) {
      expect((e as CrosstalkError).code).toBe('invalid_request');
    }
  });

  it('keys only hold [a-z0-9:._+-]', () => {
    const { key: k } = buildAgentSessionKey({ agentId: 'main', channel: 'webhook', peer: { kind: 'group', id: 'Ops Team/#1' }, dmScope: 'per-channel-peer', identityLinks: {} });
    expect(k).toBe('agent:main:webhook:group:ops-team--1.9a67338d7300');
    expect(k).toMatch(/^agent:[a-z0-9._+-]+:[a-z0-9:._+-]+$/);
  });
});

describe('one session per sender: a key part is one to one', () => {
  const direct = (id: string, o: { threadId?: string; accountId?: string; dmScope?: any } = {}) =>
    resolveInboundSessionRoute(plugins.get('webhook')!, { from: id, peer: { kind: 'direct', id }, text: 'x', replyTarget: { to: `user:${id}` }, ...(o.threadId ? { sessionThreadId: o.threadId } : {}), ...(o.accountId ? { accountId: o.accountId } : {}) }, { agentId: 'main', session: { dmScope: o.dmScope ?? 'per-channel-peer', identityLinks: {} } }).sessionKey;

  it('ids that differ only in what a key cannot hold are two sessions (before: one, each sender\'s run saw the other\'s messages)', () => {
    const pairs = [
      ['jürgen', 'jörgen'],
      ['a/b#c', 'a-b-c'],
      ['@alice=bridge:example.org', '@alice-bridge:example.org'],
      ['bob smith', 'bob-smith'],
      ['x y', 'x\ty'],
      // Probe V: trim() stripped Unicode spaces and the BOM, toLowerCase() folded the Kelvin sign: all were `kate`.
      ['kate', 'kate\u00a0'],
      ['kate', '\ufeffkate'],
      ['kate', '\u212Aate'],
      ['kate', '\u3000kate'],
      ['kate', ' kate'],
      ['jo hn', ' jo hn'],
      ['\u00c5', '\u212B'],
    ];
    for (const [a, b] of pairs) if (a !== b) expect(direct(a!)).not.toBe(direct(b!));
    // Every dmScope, and a thread or an account spelled so, too.
    for (const dmScope of ['per-peer', 'per-account-channel-peer']) expect(direct('jürgen', { dmScope })).not.toBe(direct('jörgen', { dmScope }));
    expect(direct('u1', { threadId: 't/1' })).not.toBe(direct('u1', { threadId: 't-1' }));
    expect(direct('u1', { accountId: 'w/1', dmScope: 'per-account-channel-peer' })).not.toBe(direct('u1', { accountId: 'w-1', dmScope: 'per-account-channel-peer' }));
  });

  it('no id can be picked to equal another\'s key: a clean id shaped like a hashed part, or holding :thread:, is hashed too', () => {
    const hashed = keyPart('jürgen');
    expect(hashed).toMatch(/^j-rgen\.[0-9a-f]{12}$/);
    expect(keyPart(hashed)).not.toBe(hashed);
    expect(direct(hashed)).not.toBe(direct('jürgen'));
    // A sender named `bob:thread:1` is not bob's thread 1.
    expect(direct('bob:thread:1')).not.toBe(direct('bob', { threadId: '1' }));
  });

  it('clean ids keep their keys (existing sessions stay where they are); letter case is not a difference', () => {
    expect(keyPart('4242')).toBe('4242');
    expect(keyPart('-100123:topic:42')).toBe('-100123:topic:42');
    expect(keyPart('C0ABC')).toBe('c0abc');
    expect(keyPart('+15551234567')).toBe('+15551234567');
    expect(keyPart('1700000000.000100')).toBe('1700000000.000100');
    expect(direct('Alice')).toBe(direct('alice'));
    expect(direct('Jürgen')).toBe(direct('jürgen'));
  });

  it('a long id is cut and hashed: every part fits, and the key stays within MAX_SESSION_KEY', () => {
    const long = (c: string) => c.repeat(300);
    expect(keyPart(long('a'))).toHaveLength(MAX_KEY_PART);
    expect(keyPart(long('a'))).not.toBe(keyPart(`${long('a')}b`));
    expect(keyPart('x'.repeat(MAX_KEY_PART))).toBe('x'.repeat(MAX_KEY_PART));
    const k = direct(long('ü'), { threadId: long('t'), accountId: long('w'), dmScope: 'per-account-channel-peer' });
    expect(k.length).toBeLessThanOrEqual(MAX_SESSION_KEY);
    expect(k).toMatch(/^agent:[a-z0-9._+-]+:[a-z0-9:._+-]+$/);
  });
});

describe('slack targets by name', () => {
  it('a #name is sent as the channel name Slack knows, lowercased, not as an upper-cased id', async () => {
    const { resolveSlackTarget } = await import('./slack/index');
    expect(resolveSlackTarget({ to: '#General' }).to).toBe('#general');
    expect(resolveSlackTarget({ to: 'C0ABC' }).to).toBe('C0ABC');
  });
});
