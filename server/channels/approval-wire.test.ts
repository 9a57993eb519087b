// Approval button payloads per platform (only our own buttons are decisions) and who may decide from a chat (approvers).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, resolveConfig, parseRawConfig } from '../config';
import { buttonData, discordDecision, parseButtonData, slackDecision, telegramDecision } from './approval-wire';
import { chatApproversWithoutWire, describeDecider, isApprover } from './approvals';

const ID = 'apr_0mwteo31r0001_262d8fbb68f0';

describe('button payloads', () => {
  it('round-trips our callback data and refuses anything else', () => {
    expect(parseButtonData(buttonData('aa', ID))).toEqual({ approvalId: ID, decision: 'allow_always' });
    expect(parseButtonData(`ct:zz:${ID}`)).toBeNull();
    expect(parseButtonData(`ct:a1:not-an-approval`)).toBeNull();
    expect(parseButtonData('some other bot button')).toBeNull();
  });

  it('telegram: a callback_query on our keyboard is a decision; plain messages and foreign buttons are not', () => {
    const cq = (data: string) => ({ update_id: 1, callback_query: { id: 'q1', from: { id: 42, username: 'ann' }, message: { message_id: 7, chat: { id: -100 } }, chat_instance: '1', data } });
    expect(telegramDecision(cq(buttonData('d', ID)))).toEqual({ approvalId: ID, decision: 'deny', from: '42', senderName: 'ann', chatId: '-100', ack: { callbackQueryId: 'q1' } });
    expect(telegramDecision(cq('menu:1'))).toBeNull();
    expect(telegramDecision({ update_id: 2, message: { message_id: 1, chat: { id: 1, type: 'private' }, text: 'hi' } })).toBeNull();
  });

  it('slack: block_actions with our action ids only', () => {
    const form = (payload: unknown) => `payload=${encodeURIComponent(JSON.stringify(payload))}`;
    const base = { type: 'block_actions', user: { id: 'U1', username: 'bo' }, channel: { id: 'c0abc' } };
    expect(slackDecision(form({ ...base, actions: [{ action_id: 'ct_approval_a1', value: ID }] }))).toMatchObject({ approvalId: ID, decision: 'allow_once', from: 'U1', chatId: 'C0ABC' });
    expect(slackDecision(form({ ...base, actions: [{ action_id: 'other_app_button', value: ID }] }))).toBeNull();
    expect(slackDecision(form({ type: 'view_submission', user: { id: 'U1' } }))).toBeNull();
  });

  it('discord: MESSAGE_COMPONENT (type 3) with our custom_id only', () => {
    const it3 = (custom_id: string) => ({ type: 3, channel_id: '77', application_id: '33', token: 't', member: { user: { id: '44', username: 'dee' } }, data: { custom_id, component_type: 2 } });
    expect(discordDecision(it3(buttonData('a1', ID)))).toMatchObject({ approvalId: ID, decision: 'allow_once', from: '44', chatId: '77', ack: { applicationId: '33', token: 't' } });
    expect(discordDecision(it3('something:else'))).toBeNull();
    expect(discordDecision({ type: 2, channel_id: '77', data: { name: 'ask' } })).toBeNull();
  });
});

describe('who may decide', () => {
  const config = (channels: Record<string, Record<string, unknown>>) => resolveConfig(parseRawConfig({ channels }), { CROSSTALK_DATA_DIR: '/tmp/x' });

  it('only peers in channels.<name>.approvers; allowFrom (even "*") admits senders and decides nothing; nobody when approvers is missing', () => {
    const c = config({ telegram: { botToken: 't', allowFrom: ['*'], approvers: ['42', 'telegram:43'] }, slack: { botToken: 'x', allowFrom: ['U1'] }, discord: { botToken: 'd', allowFrom: ['*'] } });
    expect(isApprover(c, 'telegram', '42')).toBe(true);
    expect(isApprover(c, 'telegram', '43')).toBe(true);
    expect(isApprover(c, 'telegram', '44')).toBe(false);
    expect(isApprover(c, 'slack', 'U1')).toBe(false);
    expect(isApprover(c, 'discord', 'anyone')).toBe(false);
  });

  it('approvers on a channel with no approval buttons are named at start (nobody there can decide)', () => {
    // Before: accepted and silent; a Mattermost approver pressing nothing, the operator not told.
    const c = config({ mattermost: { apiBaseUrl: 'http://127.0.0.1:1', botToken: 'm', approvers: ['u1'] }, telegram: { botToken: 't', approvers: ['42'] }, slack: { botToken: 'x' } });
    expect(chatApproversWithoutWire(c)).toEqual(['mattermost']);
  });

  it('"*" in approvers stops the start with a message naming the key', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-approvers-'));
    const file = path.join(dir, 'c.json');
    fs.writeFileSync(file, JSON.stringify({ channels: { telegram: { botToken: 't', approvers: ['42', '*'] } } }));
    expect(() => loadConfig({ CROSSTALK_CONFIG: file, CROSSTALK_DATA_DIR: dir })).toThrow(/bad key "channels\.telegram\.approvers": "\*" is not allowed/);
    fs.writeFileSync(file, JSON.stringify({ channels: { telegram: { botToken: 't', approvers: ['42'] } } }));
    expect(loadConfig({ CROSSTALK_CONFIG: file, CROSSTALK_DATA_DIR: dir }).channels.telegram!.approvers).toEqual(['42']);
  });

  it('trust keys under accounts.<id> stop the start with a message naming the key (they were accepted and never read)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-approvers-'));
    const file = path.join(dir, 'c.json');
    for (const key of ['approvers', 'allowFrom', 'dmPolicy'] as const) {
      const value = key === 'dmPolicy' ? 'open' : ['*'];
      fs.writeFileSync(file, JSON.stringify({ channels: { slack: { botToken: 'x', accounts: { a1: { botToken: 'y', [key]: value } } } } }));
      expect(() => loadConfig({ CROSSTALK_CONFIG: file, CROSSTALK_DATA_DIR: dir })).toThrow(new RegExp(`bad key "channels\\.slack\\.accounts\\.a1\\.${key}": .*set per channel`));
    }
    // An account's own delivery settings are still its own.
    fs.writeFileSync(file, JSON.stringify({ channels: { slack: { botToken: 'x', approvers: ['U1'], accounts: { a1: { botToken: 'y' } } } } }));
    expect(loadConfig({ CROSSTALK_CONFIG: file, CROSSTALK_DATA_DIR: dir }).channels.slack!.approvers).toEqual(['U1']);
  });

  it('says who decided', () => {
    const label = (id: string) => ({ telegram: 'Telegram' })[id] ?? id;
    expect(describeDecider({ type: 'chat', channel: 'telegram', id: '42', name: 'ann' }, label)).toBe('ann (Telegram)');
    expect(describeDecider(undefined, label)).toBe('the operator (room)');
  });
});
