// Unit tests for ordering the agent picker's delegates.
import { describe, expect, it } from 'vitest';
import type { DelegateSummary } from '@/lib/trpc/types';
import { sortDelegates } from './use-delegates';

const d = (id: string, status: 'running' | 'idle', at: string): DelegateSummary => ({
  conversation_id: id,
  agent_id: 'researcher',
  mode: 'standard',
  cwd: null,
  last_interacted_at: at,
  status,
  turns: 1,
  bytes: 10,
});

describe('sortDelegates', () => {
  it('puts running first, then newest interaction, once each', () => {
    const out = sortDelegates([d('a', 'idle', '2024-01-03'), d('b', 'running', '2024-01-01'), d('c', 'idle', '2024-01-04'), d('a', 'idle', '2024-01-03')]);
    expect(out.map((x) => x.conversation_id)).toEqual(['b', 'c', 'a']);
  });
});
