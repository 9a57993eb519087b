// A run's tool policy from its trust: channel senders get `channelTools`, never wider than a deny in `tools`.
import { describe, expect, it } from 'vitest';
import { type AgentConfig } from '../config';
import { policyFor } from './policy';
import type { Trust } from './trust';

const agent = (tools: AgentConfig['tools'], channelTools?: AgentConfig['channelTools']) => ({ id: 'main', tools, ...(channelTools ? { channelTools } : {}) }) as unknown as AgentConfig;
const sender = { kind: 'channel', channel: 'webhook', peer: 'mallory' } as unknown as Trust;
const operator = { kind: 'operator' } as unknown as Trust;

describe('policyFor', () => {
  it('a tool the operator config denies stays denied for a channel sender, whatever channelTools says', () => {
    const a = agent({ exec: 'deny', 'mcp__files__*': 'deny' }, { '*': 'auto' });
    expect(policyFor(a, 'exec', sender)).toBe('deny');
    expect(policyFor(a, 'mcp__files__write', sender)).toBe('deny');
    // Everything else follows channelTools, also where it is wider than `tools` asks.
    expect(policyFor(a, 'sessions_list', sender)).toBe('auto');
    expect(policyFor(a, 'exec', operator)).toBe('deny');
  });

  it('channelTools replaces tools for channel senders otherwise (default ask, send_message auto)', () => {
    const a = agent({ sessions_list: 'auto' });
    expect(policyFor(a, 'sessions_list', sender)).toBe('ask');
    expect(policyFor(a, 'send_message', sender)).toBe('auto');
    expect(policyFor(a, 'sessions_list', operator)).toBe('auto');
  });
});
