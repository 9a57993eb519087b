'use client';
// What a person is told when their decision came after someone else's (already_resolved): the item is gone from the
// list by then, so the notice stands outside it, saying what happened and that their own decision did not apply.
import { errorCode } from '@/lib/trpc/types';

const DECISION_LABEL: Record<string, string> = { allow_once: 'Allow once', allow_always: 'Allow always', deny: 'Deny', accept: 'Submit', decline: 'Decline', cancel: 'Cancel' };

/** The notice for a failed resolve, or null when it failed for another reason. */
export function staleNoticeText(error: unknown, o: { tool?: string; decision?: string }): string | null {
  const code = errorCode(error);
  if (code !== 'already_resolved' && code !== 'unknown_approval') return null;
  const status = /already (\w+)/.exec((error as Error | null)?.message ?? '')?.[1];
  const what = o.tool ? `${o.tool} was` : 'It was';
  const decided = status ? `${what} already ${status} elsewhere` : `${what} already decided elsewhere`;
  const mine = o.decision && DECISION_LABEL[o.decision] ? `your ${DECISION_LABEL[o.decision]} did not apply` : 'your decision did not apply';
  return `${decided}: ${mine}.`;
}

export function StaleNotice({ text }: { text: string }) {
  return (
    <p role="status" data-testid="approval-stale" className="text-xs text-amber-900 dark:text-amber-200">
      {text}
    </p>
  );
}
