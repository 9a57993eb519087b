'use client';
// The live web room: sidebar, transcript + composer, toolbox and status, wired to one session's event stream.
import { useApprovals } from '@/lib/room/use-approvals';
import { useLiveState } from '@/lib/room/use-live-state';
import { useSessionEvents } from '@/lib/room/use-session-events';
import { useRoomStore } from '@/stores/room-store-provider';
import { useEffect } from 'react';
import { SessionSidebar } from '../sessions/session-sidebar';
import { ConnectionBanner, StatusBar } from '../status/status-bar';
import { ToolboxPanel } from '../toolbox/toolbox-panel';
import { Composer } from '../transcript/composer';
import { TranscriptView } from '../transcript/transcript-view';
import { Button } from '../ui/button';

export function Room() {
  const sessionKey = useRoomStore((s) => s.selectedSessionKey);
  const defaultSessionKey = useRoomStore((s) => s.defaultSessionKey);
  const events = useSessionEvents(sessionKey);

  // Keep the address bar on the open session, so a reload or a shared link comes back to it.
  useEffect(() => {
    const url = sessionKey === defaultSessionKey ? '/' : `/?session=${encodeURIComponent(sessionKey)}`;
    if (window.location.pathname + window.location.search !== url) window.history.replaceState(null, '', url);
  }, [sessionKey, defaultSessionKey]);

  return (
    <div className="flex h-dvh flex-col">
      <ConnectionBanner onRetry={events.reset} />
      <div className="flex min-h-0 flex-1">
        <SessionSidebar />
        {/* Keyed by session: per-session local state (scroll position, reason box) starts fresh on switch. */}
        <SessionPane key={sessionKey} sessionKey={sessionKey} />
      </div>
    </div>
  );
}

function SessionPane({ sessionKey }: { sessionKey: string }) {
  const live = useLiveState(sessionKey);
  const approvals = useApprovals(sessionKey);
  const toolbox = useRoomStore((s) => s.toolbox);
  const setToolbox = useRoomStore((s) => s.setToolbox);
  const running = live.activeRuns.length > 0;
  return (
    <>
      <main className="flex min-w-0 flex-1 flex-col" data-testid="session-pane" data-session-key={sessionKey}>
        <header className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-200 px-4 dark:border-zinc-800">
          <h1 className="truncate font-mono text-sm font-semibold" data-testid="session-title">
            {sessionKey}
          </h1>
          {toolbox === 'hidden' && approvals.pending.length === 0 && (
            <Button size="sm" variant="ghost" className="ml-auto" onClick={() => setToolbox('collapsed')} aria-label="Show toolbox">
              Tools
            </Button>
          )}
        </header>
        <TranscriptView sessionKey={sessionKey} />
        <Composer sessionKey={sessionKey} />
        <StatusBar sessionKey={sessionKey} running={running} />
      </main>
      <ToolboxPanel sessionKey={sessionKey} approvals={approvals} />
    </>
  );
}
