// The start's warning about tool policy keys that name no tool (server/tools/registry.ts unknownToolKeys).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { unknownToolKeys } from './registry';

describe('unknownToolKeys', () => {
  it('names a misspelt tool in tools and channelTools, and an MCP name of a server that is not configured; "*" is not a tool to know', () => {
    const tools = new Map([['exec', {}], ['send_message', {}]]);
    const config = {
      mcp: { servers: { files: {} } },
      agents: [{ tools: { exce: 'deny', exec: 'ask', '*': 'deny', mcp__files__read: 'auto', 'mcp__filez__*': 'deny' }, channelTools: { send_mesage: 'auto', send_message: 'auto', 'mcp__files__*': 'ask' } }, { tools: {} }],
    };
    // An MCP key is known by its server: a misspelt server denies nothing either.
    expect(unknownToolKeys(config as never, tools)).toEqual(['agents.0.tools.exce', 'agents.0.tools.mcp__filez__*', 'agents.0.channelTools.send_mesage']);
  });
  it('the built-in defaults name none', () => {
    expect(unknownToolKeys(loadConfig({ env: {} } as never), new Map())).toEqual([]);
  });
});

describe('CHANNEL_IDS', () => {
  it('are the registry\'s channels', async () => {
    const { createChannelRegistry } = await import('../channels/registry');
    const { CHANNEL_IDS } = await import('../channels/ids');
    expect([...createChannelRegistry().keys()].sort()).toEqual([...CHANNEL_IDS].sort());
  });
});
