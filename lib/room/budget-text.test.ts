// The budget item's sentence: what the tree spent against which cap, in tokens, dollars or both.
import { describe, expect, it } from 'vitest';
import { budgetText } from './budget-text';

describe('budgetText', () => {
  it('says the spend against the cap it is held to', () => {
    expect(budgetText({ spentTokens: 1820, capTokens: 1000, capUsd: null, spentUsd: 0 })).toBe('This request tree has spent 1,820 tokens of its 1,000-token cap. Allow once lets it spend one more cap; Deny stops it.');
    expect(budgetText({ spentUsd: 1.2345, capUsd: 1, capTokens: null, spentTokens: 5 })).toBe('This request tree has spent $1.23 of its $1.00 cap. Allow once lets it spend one more cap; Deny stops it.');
    expect(budgetText({ spentUsd: 0.5, capUsd: 0.25, spentTokens: 300, capTokens: 200 })).toContain('300 tokens of its 200-token cap and $0.50 of its $0.25 cap');
  });
  it('does not fail on args it does not know', () => {
    expect(budgetText(null)).toContain('past its cap');
  });
});
