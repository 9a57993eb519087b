'use client';
// The open session's header bar: its model (changeable, sessions.patch), queue mode, Stop while it runs (agent.cancel),
// Export as Markdown / JSON, and a slot for usage figures (tokens and cost) that another module fills.
import { download, exportFileName, fetchWholeTranscript, transcriptToJson, transcriptToMarkdown } from '@/lib/room/export-transcript';
import { errorText } from '@/lib/room/connection-text';
import { useLiveState } from '@/lib/room/use-live-state';
import { useSessionSummary } from '@/lib/room/use-sessions';
import { useTRPC, useTRPCClient } from '@/lib/trpc/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { Button } from '../ui/button';

const QUEUE_MODES = ['steer', 'followup', 'collect', 'interrupt', 'reject'] as const;

export function SessionHeaderBar({ sessionKey, children }: { sessionKey: string; /** Usage slot (tokens, cost). */ children?: ReactNode }) {
  const summary = useSessionSummary(sessionKey);
  return (
    <div
      data-testid="session-bar"
      className="flex shrink-0 flex-wrap items-center gap-x-3 gap-y-1 border-b border-zinc-200 px-2 py-1 text-xs text-zinc-600 sm:px-4 dark:border-zinc-800 dark:text-zinc-400"
    >
      <ModelField sessionKey={sessionKey} model={summary?.model} disabled={!summary} />
      <QueueModeField sessionKey={sessionKey} mode={summary?.queueMode} disabled={!summary} />
      {/* Usage figures (tokens, cost) go here. */}
      <div data-testid="session-usage-slot" className="flex items-center gap-2 empty:hidden">
        {children}
      </div>
      <div className="ml-auto flex items-center gap-1">
        <ExportButtons sessionKey={sessionKey} disabled={!summary} />
      </div>
    </div>
  );
}

function ModelField({ sessionKey, model, disabled }: { sessionKey: string; model?: string; disabled: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const agents = useQuery(trpc.agents.list.queryOptions({}, { staleTime: 5 * 60_000 }));
  const [draft, setDraft] = useState<string | null>(null);
  const patch = useMutation(
    trpc.sessions.patch.mutationOptions({
      onSuccess: () => {
        setDraft(null);
        void qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() });
      },
    }),
  );
  const known = [...new Set((agents.data?.agents ?? []).flatMap((a) => (Array.isArray(a.model) ? a.model : [a.model])).concat('scripted'))];
  const value = draft ?? model ?? '';
  const save = () => {
    const next = value.trim();
    if (next && next !== model) patch.mutate({ sessionKey, model: next });
    else setDraft(null);
  };
  return (
    <form
      className="flex items-center gap-1"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <label className="flex items-center gap-1">
        <span>Model</span>
        <input
          aria-label="Model"
          data-testid="session-model"
          list={`models-${sessionKey}`}
          value={value}
          disabled={disabled || patch.isPending}
          onChange={(e) => setDraft(e.target.value)}
          onBlur={() => draft !== null && save()}
          className="w-36 rounded border border-zinc-300 bg-white px-1.5 py-0.5 font-mono text-[11px] dark:border-zinc-700 dark:bg-zinc-950"
        />
      </label>
      <datalist id={`models-${sessionKey}`}>
        {known.map((m) => (
          <option key={m} value={m} />
        ))}
      </datalist>
      {patch.isError && (
        <span role="alert" className="text-rose-600">
          {errorText(patch.error)}
        </span>
      )}
    </form>
  );
}

function QueueModeField({ sessionKey, mode, disabled }: { sessionKey: string; mode?: string; disabled: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const patch = useMutation(trpc.sessions.patch.mutationOptions({ onSuccess: () => qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() }) }));
  return (
    <label className="flex items-center gap-1">
      <span>Queue</span>
      <select
        aria-label="Queue mode"
        data-testid="session-queue-mode"
        value={mode ?? ''}
        disabled={disabled || patch.isPending}
        onChange={(e) => patch.mutate({ sessionKey, queueMode: (e.target.value || null) as (typeof QUEUE_MODES)[number] | null })}
        className="rounded border border-zinc-300 bg-white px-1 py-0.5 text-[11px] dark:border-zinc-700 dark:bg-zinc-950"
      >
        <option value="">default</option>
        {QUEUE_MODES.map((m) => (
          <option key={m} value={m}>
            {m}
          </option>
        ))}
      </select>
    </label>
  );
}

function ExportButtons({ sessionKey, disabled }: { sessionKey: string; disabled: boolean }) {
  const client = useTRPCClient();
  const [busy, setBusy] = useState(false);
  const run = async (format: 'md' | 'json') => {
    setBusy(true);
    try {
      const rows = await fetchWholeTranscript((cursor) => client.chat.history.query({ sessionKey, limit: 200, includeTools: true, ...(cursor ? { cursor } : {}) }));
      if (format === 'md') download(exportFileName(sessionKey, 'md'), transcriptToMarkdown(sessionKey, rows), 'text/markdown');
      else download(exportFileName(sessionKey, 'json'), transcriptToJson(sessionKey, rows), 'application/json');
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <span className="hidden sm:inline">Export</span>
      <Button size="sm" variant="ghost" disabled={disabled || busy} aria-label="Export as Markdown" onClick={() => void run('md')}>
        .md
      </Button>
      <Button size="sm" variant="ghost" disabled={disabled || busy} aria-label="Export as JSON" onClick={() => void run('json')}>
        .json
      </Button>
    </>
  );
}

/** "Stop" (CONTRACT §7): shown while the open session has a run going; cancels it (agent.cancel). */
export function StopButton({ sessionKey }: { sessionKey: string }) {
  const trpc = useTRPC();
  const live = useLiveState(sessionKey);
  const summary = useSessionSummary(sessionKey);
  const running = live.activeRuns.length > 0 || summary?.status === 'running';
  // Runs that started before this tab subscribed are not in the live state: ask the server which ones are going.
  const server = useQuery(trpc.chat.activeRuns.queryOptions({ sessionKey }, { enabled: running, staleTime: 0 }));
  const cancel = useMutation(trpc.chat.agentCancel.mutationOptions());
  if (!running) return null;
  const stop = async () => {
    const ids = new Set([...live.activeRuns, ...(server.data?.runIds ?? [])]);
    if (ids.size === 0) for (const id of (await server.refetch()).data?.runIds ?? []) ids.add(id);
    await Promise.allSettled([...ids].map((runId) => cancel.mutateAsync({ runId, reason: 'stopped from the room' })));
  };
  return (
    <Button size="sm" variant="danger" data-testid="stop-run" disabled={cancel.isPending} onClick={() => void stop()}>
      Stop
    </Button>
  );
}
