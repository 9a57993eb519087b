// What a pending `budget` item (CONTRACT §5 "Budgets") asks, said as a sentence for the approval row and the inbox.
import { formatUsd } from '../format';

/** The item's args: the request tree's spend against the cap it is held to now. */
export interface BudgetArgs {
  spentUsd?: number;
  capUsd?: number | null;
  spentTokens?: number;
  capTokens?: number | null;
}

/** "This request tree has spent 182 tokens of its 100-token cap. Allow once lets it spend one more cap; Deny stops it." */
export function budgetText(args: unknown): string {
  const a = (args ?? {}) as BudgetArgs;
  const parts: string[] = [];
  if (typeof a.capTokens === 'number') parts.push(`${Number(a.spentTokens ?? 0).toLocaleString('en-US')} tokens of its ${a.capTokens.toLocaleString('en-US')}-token cap`);
  if (typeof a.capUsd === 'number') parts.push(`${formatUsd(Number(a.spentUsd ?? 0))} of its ${formatUsd(a.capUsd)} cap`);
  const spent = parts.length ? parts.join(' and ') : 'past its cap';
  return `This request tree has spent ${spent}. Allow once lets it spend one more cap; Deny stops it.`;
}
