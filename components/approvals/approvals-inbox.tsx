'use client';
// The approvals inbox: a header button with the pending count opening a dialog named "Approvals" that lists every pending
// approval of every session, oldest first, with its session, parent chain and run trust, tool and arguments, and the same
// three decisions and Reason box as the toolbox's Approval row; it stays live, and a / d decide on the focused one. Its
// "History" tab lists what was decided, by whom and where (approvals-history.tsx).
import { prettyJson } from '@/lib/format';
import { errorText } from '@/lib/room/connection-text';
import { useTRPC } from '@/lib/trpc/client';
import { errorCode, type PendingApproval } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useInbox } from '@/lib/room/use-inbox';
import { usePendingCount } from './pending-count';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { Button } from '../ui/button';
import { DecisionButtons, decisionKey } from '../toolbox/decision-buttons';
import { CodeBlock } from '../ui/code-block';
import { TextInput } from '../ui/text-input';
import { ElicitationForm } from './elicitation-form';
import { StaleNotice, staleNoticeText } from './stale-notice';
import { ApprovalsHistory } from './approvals-history';
import { budgetText } from '@/lib/room/budget-text';

type Decision = 'allow_once' | 'allow_always' | 'deny';

/** Named exactly "Approvals" (CONTRACT §7); the pending count it shows is its description. */
export function ApprovalsButton() {
  const n = usePendingCount() ?? 0;
  const setOpen = useRoomStore((s) => s.setApprovalsOpen);
  const countId = useId();
  return (
    <Button
      size="sm"
      variant={n > 0 ? 'secondary' : 'ghost'}
      data-testid="open-approvals"
      data-count={n}
      aria-haspopup="dialog"
      aria-label="Approvals"
      aria-describedby={countId}
      onClick={() => setOpen(true)}
      className={n > 0 ? 'border-amber-400 dark:border-amber-600' : undefined}
    >
      Approvals <span id={countId} data-testid="approvals-count" className={n > 0 ? 'rounded-full bg-amber-400 px-1.5 font-semibold text-amber-950' : 'text-zinc-500'}>{n}</span>
    </Button>
  );
}

export function ApprovalsDialog() {
  const open = useRoomStore((s) => s.approvalsOpen);
  const setOpen = useRoomStore((s) => s.setApprovalsOpen);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      aria-label="Approvals"
      data-testid="approvals-dialog"
      onClose={() => setOpen(false)}
      className="m-auto max-h-[85dvh] w-[min(44rem,calc(100vw-1rem))] overflow-hidden rounded-lg border border-zinc-200 bg-white p-0 text-zinc-900 shadow-2xl backdrop:bg-black/40 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100"
    >
      {open && <InboxBody onClose={() => setOpen(false)} />}
    </dialog>
  );
}

type Tab = 'pending' | 'history';

function InboxBody({ onClose }: { onClose: () => void }) {
  const { query, approvals } = useInbox();
  const [tab, setTab] = useState<Tab>('pending');
  // A decision that came after someone else's: its item leaves the list at the refetch, so it is said here.
  const [stale, setStale] = useState<string | null>(null);
  const tabs = useRef<HTMLDivElement>(null);
  // The ARIA tabs pattern: one Tab stop (the selected tab), the arrow keys (and Home/End) move and select; a tab names
  // the panel it controls only while that panel is there.
  const onTabKey = (e: React.KeyboardEvent) => {
    const order: Tab[] = ['pending', 'history'];
    const i = order.indexOf(tab);
    const next = e.key === 'ArrowRight' ? order[(i + 1) % order.length] : e.key === 'ArrowLeft' ? order[(i + order.length - 1) % order.length] : e.key === 'Home' ? order[0] : e.key === 'End' ? order.at(-1) : undefined;
    if (!next) return;
    e.preventDefault();
    setTab(next);
    tabs.current?.querySelector<HTMLButtonElement>(`#approvals-tab-${next}`)?.focus();
  };
  const tabButton = (id: Tab, label: string) => (
    <button
      type="button"
      role="tab"
      id={`approvals-tab-${id}`}
      aria-selected={tab === id}
      aria-controls={tab === id ? `approvals-panel-${id}` : undefined}
      tabIndex={tab === id ? 0 : -1}
      onClick={() => setTab(id)}
      className={tab === id ? 'border-b-2 border-indigo-600 px-2 py-1 text-xs font-semibold' : 'border-b-2 border-transparent px-2 py-1 text-xs text-zinc-500 hover:text-zinc-800 dark:hover:text-zinc-200'}
    >
      {label}
    </button>
  );
  return (
    <div className="flex max-h-[85dvh] flex-col">
      <div className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-4 py-2 dark:border-zinc-700">
        <h2 className="text-sm font-semibold">Approvals</h2>
        <div role="tablist" aria-label="Approvals views" className="flex gap-1" ref={tabs} onKeyDown={onTabKey}>
          {tabButton('pending', 'Pending')}
          {tabButton('history', 'History')}
        </div>
        {tab === 'pending' && <span className="hidden text-xs text-zinc-500 sm:inline">{approvals.length} pending, oldest first · focus one and press a to allow once, d to deny</span>}
        <Button size="sm" variant="ghost" className="ml-auto" aria-label="Close approvals" onClick={onClose}>
          ✕
        </Button>
      </div>
      {tab === 'history' ? (
        <div role="tabpanel" id="approvals-panel-history" aria-labelledby="approvals-tab-history" className="flex min-h-0 flex-1 flex-col">
          <ApprovalsHistory />
        </div>
      ) : (
        <div role="tabpanel" id="approvals-panel-pending" aria-labelledby="approvals-tab-pending" className="min-h-0 flex-1 overflow-y-auto p-2">
          {stale && (
            <div className="px-1 pb-2">
              <StaleNotice text={stale} />
            </div>
          )}
          {query.isPending && <p className="p-3 text-sm text-zinc-500">Loading…</p>}
          {!query.isPending && approvals.length === 0 && (
            <p data-testid="approvals-empty" className="p-6 text-center text-sm text-zinc-500">
              Nothing waits for a decision.
            </p>
          )}
          <ul className="space-y-2" aria-label="Pending approvals">
            {approvals.map((a) => (
              <InboxItem key={a.approvalId} approval={a} onOpenSession={onClose} onStale={setStale} />
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

function trustText(a: PendingApproval): string {
  const t = (a as { trust?: { kind: string; channel?: string; peer?: string } }).trust;
  return t?.kind === 'channel' ? `channel ${t.channel} · ${t.peer}` : 'operator';
}

function InboxItem({ approval: a, onOpenSession, onStale }: { approval: PendingApproval; onOpenSession: () => void; onStale: (text: string | null) => void }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const selectSession = useRoomStore((s) => s.selectSession);
  const [reason, setReason] = useState('');
  const resolve = useMutation(
    trpc.approvals.resolve.mutationOptions({
      onMutate: () => onStale(null),
      onError: (e, vars) => onStale(staleNoticeText(e, { tool: a.tool, decision: vars.decision })),
      onSettled: () => qc.invalidateQueries({ queryKey: trpc.approvals.list.pathKey() }),
    }),
  );
  const chain = (a as { chain?: string[] }).chain ?? [a.sessionKey];
  const decide = (decision: Decision) => {
    const text = reason.trim();
    resolve.mutate({ approvalId: a.approvalId, decision, via: 'inbox', ...(text ? { reason: text } : {}) });
  };
  const busy = resolve.isPending || resolve.isSuccess;
  const stale = resolve.isError && ['already_resolved', 'unknown_approval'].includes(errorCode(resolve.error) ?? '');
  return (
    <li
      data-testid="inbox-approval"
      data-approval-id={a.approvalId}
      data-session-key={a.sessionKey}
      tabIndex={0}
      aria-label={`${a.tool} in ${a.sessionKey}`}
      aria-keyshortcuts="a d"
      onKeyDown={(e) => {
        if (a.kind === 'elicitation' || a.kind === 'authorization' || !decisionKey(e, busy, decide)) return; // an elicitation is answered by its form
        // Keep the keyboard in the list: the next one takes the focus.
        const next = (e.currentTarget.nextElementSibling ?? e.currentTarget.previousElementSibling) as HTMLElement | null;
        next?.focus();
      }}
      className="space-y-1.5 rounded-md border border-amber-300 bg-amber-50/60 p-3 text-sm outline-none focus-visible:ring-2 focus-visible:ring-indigo-500 dark:border-amber-700 dark:bg-amber-950/30"
    >
      <div className="flex flex-wrap items-baseline gap-x-2 gap-y-0.5">
        <span className="font-mono text-xs font-semibold">{a.tool}</span>
        <a
          href={`/?session=${encodeURIComponent(a.sessionKey)}`}
          data-testid="inbox-session"
          className="min-w-0 truncate font-mono text-xs text-indigo-700 underline decoration-dotted dark:text-indigo-300"
          onClick={(e) => {
            if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            selectSession(a.sessionKey);
            onOpenSession();
          }}
        >
          {a.sessionKey}
        </a>
        <span className="ml-auto text-[11px] text-zinc-500" title={a.requestedAt}>
          {new Date(a.requestedAt).toLocaleTimeString()}
        </span>
      </div>
      <div className="flex flex-wrap items-center gap-x-2 text-[11px] text-zinc-600 dark:text-zinc-400">
        {/* The chain of sessions, root first, ending at this item's session (CONTRACT §7: its session and parent chain). */}
        <span data-testid="inbox-chain" role="group" aria-label="Parent chain" className="min-w-0 break-all font-mono">
          {chain.map((k, i) => (
            <span key={k} data-session-key={k}>
              {i > 0 && ' → '}
              {k}
            </span>
          ))}
        </span>
        <span aria-hidden>·</span>
        <span data-testid="inbox-trust">trust: {trustText(a)}</span>
      </div>
      {a.kind === 'elicitation' || a.kind === 'authorization' ? (
        <ElicitationForm approval={a} busy={busy} decide={(decision, content) => resolve.mutate({ approvalId: a.approvalId, decision, via: 'inbox', ...(content ? { content } : {}) })} />
      ) : (
        <>
          {a.kind === 'budget' && (
        <p data-testid="budget-text" className="text-sm">
          {budgetText(a.args)}
        </p>
      )}
      <CodeBlock text={prettyJson(a.args)} label="Tool arguments" maxHeight="max-h-32" />
          <TextInput aria-label="Reason" placeholder="Reason (optional, sent with a denial)" value={reason} onChange={(e) => setReason(e.target.value)} />
          <DecisionButtons busy={busy} decide={decide} always={a.kind !== 'budget'}>
            {stale && <span className="text-xs text-zinc-500">Already decided elsewhere.</span>}
          </DecisionButtons>
        </>
      )}
      {resolve.isError && !stale && (
        <p role="alert" className="text-xs text-rose-600">
          Could not resolve: {errorText(resolve.error)}
        </p>
      )}
    </li>
  );
}
