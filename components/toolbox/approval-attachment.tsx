'use client';
// The toolbox's attachment row: the oldest pending approval with Allow once / Allow always / Deny and a reason.
import { prettyJson } from '@/lib/format';
import type { useApprovals } from '@/lib/room/use-approvals';
import { errorText } from '@/lib/room/connection-text';
import { errorCode, type PendingApproval } from '@/lib/trpc/types';
import { useEffect, useRef, useState } from 'react';

/**
 * The row had the keyboard's focus when a decision was made: the next item's row (a new element, keyed by its id)
 * takes it, so a keyboard user goes on deciding (before, the focus fell to the page's body).
 */
let refocusNextRow = false;
import { DecisionButtons, decisionKey } from './decision-buttons';
import { CodeBlock } from '../ui/code-block';
import { TextInput } from '@/components/ui/text-input';
import { ElicitationForm } from '../approvals/elicitation-form';
import { StaleNotice, staleNoticeText } from '../approvals/stale-notice';
import { budgetText } from '@/lib/room/budget-text';

type Decision = 'allow_once' | 'allow_always' | 'deny';

interface Props {
  /** Pending approvals, oldest first: the first one is asked. */
  pending: PendingApproval[];
  resolve: ReturnType<typeof useApprovals>['resolve'];
}

export function ApprovalAttachment({ pending, resolve }: Props) {
  const current = pending[0];
  // A decision that came after someone else's: said here, where the item was, once the refetch has taken it away
  // (the mutation's state outlives the row; the next decision clears it).
  const tried = resolve.variables as { approvalId?: string; decision?: string } | undefined;
  const staleText = resolve.isError && tried?.approvalId && !pending.some((p) => p.approvalId === tried.approvalId) ? staleNoticeText(resolve.error, { decision: tried.decision }) : null;
  const stale = staleText && (
    <div className="shrink-0 border-t border-amber-300 bg-amber-50 px-3 py-2 dark:border-amber-700 dark:bg-amber-950/40">
      <StaleNotice text={staleText} />
    </div>
  );
  // An MCP server's authorization is a URL to open, answered like a URL elicitation (CONTRACT §7).
  // Keyed by id: the reason box starts empty for each approval.
  const row = !current ? null : current.kind === 'elicitation' || current.kind === 'authorization' ? <ElicitationRow key={current.approvalId} pending={pending} resolve={resolve} /> : <ApprovalForm key={current.approvalId} pending={pending} resolve={resolve} />;
  return (
    <>
      {stale}
      {row}
    </>
  );
}

function ApprovalForm({ pending, resolve }: Props) {
  const [reason, setReason] = useState('');
  const current = pending[0]!;
  const row = useRef<HTMLElement>(null);
  useEffect(() => {
    if (!refocusNextRow) return;
    refocusNextRow = false;
    row.current?.focus();
  }, []);

  const decide = (decision: Decision) => {
    refocusNextRow = !!row.current?.contains(document.activeElement);
    const text = reason.trim();
    resolve.mutate(
      { approvalId: current.approvalId, decision, ...(text ? { reason: text } : {}) },
      { onSuccess: () => setReason('') },
    );
  };
  const busy = resolve.isPending;
  // Someone else (another tab, a script) got there first: the refetch moves on to the next one.
  const staleError = resolve.isError && ['already_resolved', 'unknown_approval'].includes(errorCode(resolve.error) ?? '');

  return (
    <section
      ref={row}
      role="region"
      aria-label="Approval"
      data-testid="approval-attachment"
      data-approval-id={current.approvalId}
      // Focus the row (Tab or click) and press a to allow once, d to deny (with the reason typed, if any).
      tabIndex={0}
      aria-keyshortcuts="a d"
      onKeyDown={(e) => void decisionKey(e, busy, decide)}
      className="flex shrink-0 flex-col gap-2 border-t-2 border-amber-400 bg-amber-50 p-3 outline-none focus-visible:ring-2 focus-visible:ring-indigo-500 focus-visible:ring-inset dark:border-amber-600 dark:bg-amber-950/40"
    >
      <div className="flex items-center gap-2 text-sm">
        <span aria-hidden>⚠</span>
        <span className="font-medium">
          <span className="font-mono">{current.tool}</span> needs approval
        </span>
        {pending.length > 1 && (
          <span data-testid="approval-count" className="ml-auto text-xs text-amber-800 dark:text-amber-200">
            1 of {pending.length} pending
          </span>
        )}
      </div>
      {current.source?.kind === 'mcp' && <McpSource source={current.source} />}
      {current.trust?.kind === 'channel' && (
        <p data-testid="approval-trust" className="text-xs text-amber-900 dark:text-amber-200">
          Asked by a run that channel sender <span className="font-mono">{current.trust.channel}:{current.trust.peer}</span> started (its
          agent&apos;s <span className="font-mono">channelTools</span> policy applies).
        </p>
      )}
      {current.kind === 'budget' && (
        <p data-testid="budget-text" className="text-sm">
          {budgetText(current.args)}
        </p>
      )}
      <CodeBlock text={prettyJson(current.args)} label="Tool arguments" maxHeight="max-h-32" />
      <TextInput
        aria-label="Reason"
        placeholder="Reason (optional, sent with a denial)"
        value={reason}
        onChange={(e) => setReason(e.target.value)}
      />
      <DecisionButtons busy={busy} decide={decide} always={current.kind !== 'budget'} />
      {resolve.isError && !staleError && (
        <p role="alert" className="text-xs text-rose-600">
          Could not resolve: {errorText(resolve.error)}
        </p>
      )}
    </section>
  );
}

/** An MCP server's question (CONTRACT §7): the same region, holding the elicitation's form or link. */
function ElicitationRow({ pending, resolve }: Props) {
  const current = pending[0]!;
  return (
    <section
      role="region"
      aria-label="Approval"
      data-testid="approval-attachment"
      data-approval-id={current.approvalId}
      data-kind={current.kind}
      className="flex shrink-0 flex-col gap-2 border-t-2 border-amber-400 bg-amber-50 p-3 dark:border-amber-600 dark:bg-amber-950/40"
    >
      <ElicitationForm approval={current} busy={resolve.isPending} decide={(decision, content) => resolve.mutate({ approvalId: current.approvalId, decision, ...(content ? { content } : {}) })} />
      {resolve.isError && (
        <p role="alert" className="text-xs text-rose-600">
          Could not resolve: {errorText(resolve.error)}
        </p>
      )}
    </section>
  );
}

const HINTS: Array<[string, string]> = [
  ['readOnlyHint', 'read-only'],
  ['destructiveHint', 'destructive'],
  ['idempotentHint', 'idempotent'],
  ['openWorldHint', 'open world'],
];

/** An MCP tool's server, tool and annotations. The annotations are the server's own claims: shown, never trusted for policy. */
function McpSource({ source }: { source: NonNullable<PendingApproval['source']> }) {
  const hints = HINTS.filter(([k]) => typeof source.annotations?.[k] === 'boolean').map(([k, label]) => `${source.annotations![k] ? '' : 'not '}${label}`);
  return (
    <p data-testid="approval-mcp" className="text-xs text-amber-900 dark:text-amber-100">
      MCP server <span className="font-mono font-semibold">{source.server}</span>, tool <span className="font-mono font-semibold">{source.tool}</span>
      {hints.length > 0 && <span> · server says: {hints.join(', ')} (unverified hints; policy ignores them)</span>}
    </p>
  );
}
