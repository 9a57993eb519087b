'use client';
// The toolbox: the session's tool calls (hidden / collapsed / expanded) with the approval row anchored at its bottom.
import { cn } from '@/lib/cn';
import { deriveToolbox } from '@/lib/room/tool-calls';
import type { useApprovals } from '@/lib/room/use-approvals';
import { useLiveState } from '@/lib/room/use-live-state';
import { useSessionSummary } from '@/lib/room/use-sessions';
import { useTranscript } from '@/lib/room/use-transcript';
import { useRoomStore } from '@/stores/room-store-provider';
import { useMemo } from 'react';
import { Badge } from '../ui/badge';
import { Button } from '../ui/button';
import { ApprovalAttachment } from './approval-attachment';
import { ToolCallList, ToolCallSummary } from './tool-call-list';

export function ToolboxPanel({ sessionKey, approvals }: { sessionKey: string; approvals: ReturnType<typeof useApprovals> }) {
  const mode = useRoomStore((s) => s.toolbox);
  const setMode = useRoomStore((s) => s.setToolbox);
  const { messages } = useTranscript(sessionKey);
  const live = useLiveState(sessionKey);
  const summary = useSessionSummary(sessionKey);
  const sessionRunning = summary ? summary.status === 'running' : true;
  const { calls, approvals: pending } = useMemo(
    () => deriveToolbox(messages, live, approvals.pending, sessionRunning),
    [messages, live, approvals.pending, sessionRunning],
  );

  const attention = pending.length > 0;
  // Attention overrides "hidden": an approval must be seen to be answered.
  if (mode === 'hidden' && !attention) return null;
  const expanded = mode === 'expanded';
  const running = calls.filter((c) => c.status === 'running').length;
  // Nothing to show (no call, nothing asking) and not opened on purpose: a strip, so the transcript keeps the width.
  if (mode === 'collapsed' && calls.length === 0 && !attention) return <FoldedToolbox onExpand={() => setMode('expanded')} onHide={() => setMode('hidden')} />;

  return (
    <aside
      aria-label="Toolbox"
      data-testid="toolbox"
      data-mode={mode}
      data-attention={attention ? 'true' : undefined}
      className="flex w-full shrink-0 flex-col border-t border-zinc-200 bg-zinc-50/60 p-2 md:w-72 md:border-t-0 xl:w-80 md:border-l dark:border-zinc-800 dark:bg-zinc-900/40"
    >
      <div
        className={cn(
          // Narrow windows: at most half the screen, so the conversation stays usable; the approval row is its last child.
          'flex max-h-[50dvh] min-h-0 flex-col overflow-hidden rounded-lg border bg-white shadow-sm md:max-h-full dark:bg-zinc-950',
          attention ? 'border-amber-400 dark:border-amber-600' : 'border-zinc-200 dark:border-zinc-800',
        )}
      >
        <div className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
          <h2 className="text-sm font-semibold">Tools</h2>
          <Badge>{calls.length}</Badge>
          {running > 0 && <Badge tone="info">{running} running</Badge>}
          <div className="ml-auto flex gap-1">
            <Button
              size="sm"
              variant="ghost"
              aria-expanded={expanded}
              aria-controls="toolbox-calls"
              aria-label={expanded ? 'Collapse toolbox' : 'Expand toolbox'}
              onClick={() => setMode(expanded ? 'collapsed' : 'expanded')}
            >
              {expanded ? '▾' : '▸'}
            </Button>
            <Button size="sm" variant="ghost" aria-label="Hide toolbox" onClick={() => setMode('hidden')}>
              ✕
            </Button>
          </div>
        </div>
        {expanded ? (
          <div id="toolbox-calls" className="min-h-0 flex-1 overflow-y-auto">
            <ToolCallList calls={calls} />
          </div>
        ) : (
          calls.length > 0 && !attention && <ToolCallSummary call={calls[calls.length - 1]!} />
        )}
        <ApprovalAttachment pending={pending} resolve={approvals.resolve} />
      </div>
    </aside>
  );
}

/** The empty toolbox: a narrow strip beside the transcript (a thin row under it on narrow windows) with the same two controls. */
function FoldedToolbox({ onExpand, onHide }: { onExpand: () => void; onHide: () => void }) {
  return (
    <aside
      aria-label="Toolbox"
      data-testid="toolbox"
      data-mode="collapsed"
      data-folded="true"
      className="flex w-full shrink-0 items-center gap-1 border-t border-zinc-200 bg-zinc-50/60 px-2 py-1 md:w-10 md:flex-col md:border-t-0 md:border-l md:px-1 md:py-2 dark:border-zinc-800 dark:bg-zinc-900/40"
    >
      <Button size="sm" variant="ghost" aria-expanded={false} aria-label="Expand toolbox" title="Tools (none yet)" onClick={onExpand}>
        ◂
      </Button>
      <h2 className="text-xs font-semibold text-zinc-500 md:[writing-mode:vertical-rl]">Tools</h2>
      <Button size="sm" variant="ghost" aria-label="Hide toolbox" className="ml-auto md:mt-auto md:ml-0" onClick={onHide}>
        ✕
      </Button>
    </aside>
  );
}
