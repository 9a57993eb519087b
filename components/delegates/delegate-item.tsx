'use client';
// One delegate in the agent picker: agent, mode, status, last interaction, turns, size; preview, resume, dismiss.
import { cn } from '@/lib/cn';
import { formatBytes } from '@/lib/format';
import { errorText } from '@/lib/room/connection-text';
import { useDelegatePreview, useDismissDelegate, useResumeDelegate } from '@/lib/room/use-delegates';
import type { DelegateSummary } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useId, useState, type ReactNode } from 'react';
import { Badge } from '../ui/badge';
import { Button } from '../ui/button';
import { LocalTime } from '../ui/local-time';
import { Spinner } from '../ui/spinner';
import { TextInput } from '@/components/ui/text-input';

const PREVIEW_SIZES = [3, 5, 10, 20] as const;

export function DelegateItem({ parentKey, delegate: d, children }: { parentKey: string; delegate: DelegateSummary; children?: ReactNode }) {
  const [open, setOpen] = useState<'none' | 'preview' | 'resume'>('none');
  const [previewSize, setPreviewSize] = useState<number>(5);
  const selectSession = useRoomStore((s) => s.selectSession);
  const dismiss = useDismissDelegate();
  const titleId = useId();
  const running = d.status === 'running';

  return (
    <li
      data-testid="delegate-item"
      data-conversation-id={d.conversation_id}
      data-status={d.status}
      aria-labelledby={titleId}
      className="rounded-md border border-zinc-200 bg-white p-2 text-sm dark:border-zinc-800 dark:bg-zinc-950"
    >
      <div className="flex flex-wrap items-center gap-1.5">
        <span id={titleId} className="font-mono text-xs font-semibold">
          {d.agent_id}
          <span className="sr-only"> delegate {d.conversation_id}</span>
        </span>
        <Badge>{d.mode}</Badge>
        <Badge tone={running ? 'info' : 'neutral'}>
          {running && <Spinner label="Running" className="mr-1 size-1.5" />}
          <span data-testid="delegate-status">{d.status}</span>
        </Badge>
      </div>
      <p className="mt-0.5 truncate font-mono text-[11px] text-zinc-500" title={d.conversation_id}>
        {d.conversation_id}
      </p>
      <dl className="mt-1 flex flex-wrap gap-x-3 text-[11px] text-zinc-600 dark:text-zinc-400">
        <div className="flex gap-1">
          <dt>last</dt>
          <dd>
            <LocalTime iso={d.last_interacted_at} format="relative" />
          </dd>
        </div>
        <div className="flex gap-1">
          <dt>turns</dt>
          <dd data-testid="delegate-turns">{d.turns}</dd>
        </div>
        <div className="flex gap-1">
          <dt>size</dt>
          <dd data-testid="delegate-size" title={`${d.bytes} bytes`}>
            {formatBytes(d.bytes)}
          </dd>
        </div>
      </dl>
      <div className="mt-2 flex flex-wrap items-center gap-1">
        <label className="sr-only" htmlFor={`${titleId}-n`}>
          Messages to preview
        </label>
        <select
          id={`${titleId}-n`}
          value={previewSize}
          onChange={(e) => setPreviewSize(Number(e.target.value))}
          className="h-7 rounded-md border border-zinc-300 bg-white px-1 text-xs dark:border-zinc-700 dark:bg-zinc-900"
        >
          {PREVIEW_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <Button size="sm" aria-expanded={open === 'preview'} onClick={() => setOpen(open === 'preview' ? 'none' : 'preview')}>
          Preview last {previewSize} messages
        </Button>
        <Button size="sm" aria-expanded={open === 'resume'} onClick={() => setOpen(open === 'resume' ? 'none' : 'resume')}>
          Resume conversation
        </Button>
        <Button
          size="sm"
          variant="ghost"
          aria-label={`Open session ${d.conversation_id}`}
          onClick={() => selectSession(d.conversation_id)}
        >
          Open
        </Button>
        <Button
          size="sm"
          variant="danger"
          disabled={dismiss.isPending || running}
          title={running ? 'A running delegate cannot be dismissed' : undefined}
          onClick={() => dismiss.mutate({ sessionKey: parentKey, conversation_id: d.conversation_id })}
        >
          Dismiss
        </Button>
      </div>
      {dismiss.isError && (
        <p role="alert" className="mt-1 text-xs text-rose-600">
          Could not dismiss: {errorText(dismiss.error)}
        </p>
      )}
      {open === 'preview' && <DelegatePreview parentKey={parentKey} conversationId={d.conversation_id} limit={previewSize} />}
      {open === 'resume' && <ResumeForm parentKey={parentKey} conversationId={d.conversation_id} />}
      {children}
    </li>
  );
}

function DelegatePreview({ parentKey, conversationId, limit }: { parentKey: string; conversationId: string; limit: number }) {
  const q = useDelegatePreview(parentKey, conversationId, limit, true);
  // The server answers newest first; read them in conversation order.
  const rows = [...(q.data?.messages ?? [])].reverse();
  return (
    <section aria-label="Delegate preview" data-testid="delegate-preview" className="mt-2 rounded-md bg-zinc-50 p-2 dark:bg-zinc-900">
      {q.isPending && <p className="text-xs text-zinc-500">Loading…</p>}
      {q.isError && (
        <p role="alert" className="text-xs text-rose-600">
          Could not load messages: {errorText(q.error)}
        </p>
      )}
      {q.data && rows.length === 0 && <p className="text-xs text-zinc-500">No messages.</p>}
      <ol className="space-y-1">
        {rows.map((m) => (
          <li key={m.id} data-testid="delegate-preview-message" data-role={m.role} data-kind={m.kind} className="text-xs">
            <span className="font-semibold text-zinc-600 dark:text-zinc-300">{m.tool ? `${m.kind} ${m.tool.name}` : m.role}: </span>
            <span className="break-words whitespace-pre-wrap">{m.content}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}

function ResumeForm({ parentKey, conversationId }: { parentKey: string; conversationId: string }) {
  const [prompt, setPrompt] = useState('');
  const resume = useResumeDelegate();
  const submit = () => {
    const text = prompt.trim();
    if (!text || resume.isPending) return;
    resume.mutate({ sessionKey: parentKey, conversation_id: conversationId, prompt: text }, { onSuccess: () => setPrompt('') });
  };
  const result = resume.data;
  return (
    <form
      data-testid="delegate-resume"
      className="mt-2 space-y-2"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <div className="flex gap-1">
        <TextInput
          aria-label="Follow-up prompt"
          placeholder="Follow-up prompt for this delegate"
          value={prompt}
          onChange={(e) => setPrompt(e.target.value)}
          size="sm"
          className="min-w-0 flex-1"
        />
        <Button type="submit" size="sm" variant="primary" disabled={!prompt.trim() || resume.isPending}>
          Send follow-up
        </Button>
      </div>
      {resume.isPending && (
        <p data-testid="delegate-reply-pending" className="flex items-center gap-1.5 text-xs text-zinc-500">
          <Spinner label="Waiting for the reply" className="size-1.5" /> Waiting for the delegate's reply…
        </p>
      )}
      {resume.isError && (
        <p role="alert" className="text-xs text-rose-600">
          Not sent: {errorText(resume.error)}
        </p>
      )}
      {result && (
        <section
          aria-label="Delegate reply"
          data-testid="delegate-reply"
          data-status={result.status}
          className={cn('rounded-md p-2 text-xs', result.status === 'error' ? 'bg-rose-50 dark:bg-rose-950/40' : 'bg-emerald-50 dark:bg-emerald-950/40')}
        >
          <p className="mb-0.5 text-[11px] text-zinc-500">
            (follow-up) run <span className="font-mono">{result.run_id}</span> · {result.status}
          </p>
          <p className="break-words whitespace-pre-wrap">{result.response ?? result.error?.message ?? ''}</p>
        </section>
      )}
    </form>
  );
}
