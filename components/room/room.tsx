'use client';
// The live web room: sidebar, transcript + composer, toolbox, board / agent picker / event inspector, wired to one session's events.
import { useApprovals } from '@/lib/room/use-approvals';
import { useLiveState } from '@/lib/room/use-live-state';
import { usePrefetchBoard } from '@/lib/room/use-board-prefetch';
import { usePrefetchOnSelect } from '@/lib/room/use-prefetch-on-select';
import { useRoomKeys } from '@/lib/room/use-room-keys';
import { useSessionEvents } from '@/lib/room/use-session-events';
import { useRoomStore, useRoomStoreApi } from '@/stores/room-store-provider';
import { useEffect, useRef, useState } from 'react';
import { DeferredPart, HydrationGateProvider, useRoomHydrationGate } from './deferred-part';
import { SessionSidebar } from '../sessions/session-sidebar';
import { ConnectionBanner, StatusBar } from '../status/status-bar';
import { ToolboxPanel } from '../toolbox/toolbox-panel';
import { Composer } from '../transcript/composer';
import { preloadMarkdown } from '../transcript/markdown';
import { TranscriptView } from '../transcript/transcript-view';
import { Button } from '../ui/button';
import { ApprovalsButton, ApprovalsDialog } from '../approvals/approvals-inbox';
import { PendingCountProvider } from '../approvals/pending-count';
import { SessionHeaderBar, StopButton } from './session-header';
import { SidePanel } from './side-panel';
import { ThemeToggle } from './theme-toggle';
import { NotificationsButton } from './notifications-button';
import { SessionUsage } from '../status/session-usage';
import { useNextNeedingInput } from '@/lib/room/use-next-needing-input';

// The header's side-panel toggles: the agent board, the agent picker and the event inspector.
const PANELS = [
  { id: 'board', label: 'Board', testId: 'open-board', text: 'Board' },
  { id: 'agents', label: 'Agent picker', testId: 'open-agent-picker', text: 'Agents' },
  { id: 'events', label: 'Event inspector', testId: 'open-event-inspector', text: 'Events' },
] as const;

export function Room() {
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const sessionKey = usePaneKey(selected);
  const defaultSessionKey = useRoomStore((s) => s.defaultSessionKey);
  const gate = useRoomHydrationGate();
  const events = useSessionEvents(sessionKey, gate);
  useRoomKeys();
  usePrefetchOnSelect();
  const prefetchBoard = usePrefetchBoard();

  // The Markdown renderer is fetched once the live stream is up, not while the room is still starting (a store
  // subscription: the room does not re-render for it).
  const store = useRoomStoreApi();
  useEffect(() => {
    let done = false;
    const check = (s: { connection: string }) => {
      if (done || s.connection !== 'connected') return;
      done = true;
      preloadMarkdown();
    };
    check(store.getState());
    return store.subscribe(check);
  }, [store]);

  // Keep the address bar on the open session, so a reload or a shared link comes back to it.
  // (After the switch has painted: the history API call is slow enough to show in a switch.)
  useEffect(() => {
    const url = sessionKey === defaultSessionKey ? '/' : `/?session=${encodeURIComponent(sessionKey)}`;
    const timer = window.setTimeout(() => {
      if (window.location.pathname + window.location.search !== url) window.history.replaceState(null, '', url);
    }, 250);
    return () => window.clearTimeout(timer);
  }, [sessionKey, defaultSessionKey]);

  return (
    <HydrationGateProvider value={gate}>
      <PendingCountProvider>
        <div className="flex h-dvh flex-col">
          {/* The first Tab stop: past the sidebar's search, filters and sessions, straight to the conversation. */}
          <a
            href="#conversation"
            data-testid="skip-link"
            onClick={(e) => {
              // Focus moves to the pane without a #fragment in the address (the room keeps ?session= there).
              e.preventDefault();
              document.getElementById('conversation')?.focus();
            }}
            className="sr-only rounded-md bg-indigo-600 px-3 py-1.5 text-sm text-white focus:not-sr-only focus:fixed focus:left-2 focus:top-2 focus:z-50"
          >
            Skip to conversation
          </a>
          <ConnectionBanner onRetry={events.reset} />
          <UnopenableNotice />
          <div className="flex min-h-0 flex-1">
            {/* Deferred parts split hydration: the shell (with the live event stream) commits first, then the
                sidebar, transcript and panels hydrate in later tasks; the stream's cache writes wait for them. */}
            <DeferredPart id="sidebar">
              <SessionSidebar />
            </DeferredPart>
            {/* Keyed by session: per-session local state (scroll position, reason box) starts fresh on switch. */}
            <SessionPane key={sessionKey} sessionKey={sessionKey} prefetchBoard={prefetchBoard} />
            {/* Not keyed: the board keeps its scroll and the focused card while its items open sessions beside it. */}
            <SidePanel sessionKey={sessionKey} />
          </div>
          <DeferredPart id="approvals-dialog">
            <ApprovalsDialog />
          </DeferredPart>
        </div>
      </PendingCountProvider>
    </HydrationGateProvider>
  );
}

/**
 * The session the pane (and its event stream) shows: the selection, one task after the render the click makes (the
 * sidebar's highlight), so the new transcript's request (usePrefetchOnSelect) leaves before React builds the new pane.
 * A plain update, not a transition: a transition yields to every query update that lands meanwhile and can starve.
 */
function usePaneKey(selected: string): string {
  const [pane, setPane] = useState(selected);
  // The focus was in the pane that goes (a link in its transcript, its "Next" button, or the button a closing overlay
  // gave it back to): it goes to the new pane's conversation, not to <body>.
  const refocus = useRef(false);
  useEffect(() => {
    if (pane === selected) return;
    const timer = window.setTimeout(() => {
      refocus.current = !!document.activeElement && !!document.getElementById('session-pane')?.contains(document.activeElement);
      setPane(selected);
    }, 0);
    return () => window.clearTimeout(timer);
  }, [selected, pane]);
  useEffect(() => {
    if (!refocus.current) return;
    refocus.current = false;
    if (!document.activeElement || document.activeElement === document.body) document.getElementById('conversation')?.focus({ preventScroll: true });
  }, [pane]);
  return pane;
}

/**
 * Says, in words, that a session cannot be opened: a deleted session's archive key (`…#deleted-<ms>`) or a
 * `?session=` the server fell back from (it opens the default session then). Before, the pane asked for the key and
 * showed the server's validation JSON.
 */
function UnopenableNotice() {
  const key = useRoomStore((s) => s.unopenable);
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const setUnopenable = useRoomStore((s) => s.setUnopenable);
  // The address named a session the room did not open (page.tsx falls back to the default one without a word).
  useEffect(() => {
    const asked = new URLSearchParams(window.location.search).get('session');
    if (asked !== null && asked.replace(/[A-Z]+/g, (m) => m.toLowerCase()) !== selected) setUnopenable(asked);
    // Once, at the start: later the room writes the address itself.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  if (key === null) return null;
  const why = /#deleted-\d+$/.test(key) ? 'that session was deleted' : key ? 'that is not a session key (agent:<agent>:<name>)' : 'no session was named';
  return (
    <div role="alert" data-testid="unopenable-session" className="flex items-center gap-2 border-b border-amber-300 bg-amber-50 px-3 py-1.5 text-sm text-amber-900 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100">
      <span className="min-w-0 flex-1 truncate">
        Cannot open <span className="font-mono">{key || '(empty)'}</span>: {why}. Showing <span className="font-mono">{selected}</span>.
      </span>
      <Button size="sm" variant="ghost" onClick={() => setUnopenable(null)}>
        Dismiss
      </Button>
    </div>
  );
}

function SessionPane({ sessionKey, prefetchBoard }: { sessionKey: string; prefetchBoard: () => void }) {
  const live = useLiveState(sessionKey);
  const approvals = useApprovals(sessionKey);
  const toolbox = useRoomStore((s) => s.toolbox);
  const setToolbox = useRoomStore((s) => s.setToolbox);
  const panel = useRoomStore((s) => s.panel);
  const togglePanel = useRoomStore((s) => s.togglePanel);
  const setSidebarOpen = useRoomStore((s) => s.setSidebarOpen);
  const running = live.activeRuns.length > 0;
  // Hidden with the keyboard, the toolbox takes its focused button away: the focus goes to "Show toolbox", not the body.
  const showToolbox = useRef<HTMLButtonElement>(null);
  const shownBefore = useRef(toolbox);
  useEffect(() => {
    const was = shownBefore.current;
    shownBefore.current = toolbox;
    if (toolbox === 'hidden' && was !== 'hidden' && (!document.activeElement || document.activeElement === document.body)) showToolbox.current?.focus();
  }, [toolbox]);
  return (
    // Narrow windows stack the toolbox under the conversation, so its approval row stays on screen.
    <div id="session-pane" className="flex min-w-0 flex-1 flex-col md:flex-row">
      <main id="conversation" tabIndex={-1} className="flex min-h-0 min-w-0 flex-1 flex-col outline-none" data-testid="session-pane" data-session-key={sessionKey}>
        <header className="flex h-11 shrink-0 items-center gap-1 border-b border-zinc-200 px-2 sm:gap-2 sm:px-4 dark:border-zinc-800">
          <Button size="sm" variant="ghost" className="md:hidden" aria-label="Show sessions" onClick={() => setSidebarOpen(true)}>
            ☰
          </Button>
          <h1 className="min-w-0 truncate font-mono text-sm font-semibold" data-testid="session-title" title={sessionKey}>
            {sessionKey}
          </h1>
          <SessionUsage sessionKey={sessionKey} running={running} />
          <div className="ml-auto flex min-w-0 items-center gap-1 overflow-x-auto">
            <StopButton sessionKey={sessionKey} />
            <ApprovalsButton />
            <NextNeedingInputButton />
            <NotificationsButton />
            {PANELS.map((p) => (
              <Button
                key={p.id}
                size="sm"
                variant={panel === p.id ? 'secondary' : 'ghost'}
                aria-pressed={panel === p.id}
                aria-label={p.label}
                data-testid={p.testId}
                data-panel-toggle={p.id}
                onClick={() => togglePanel(p.id)}
                {...(p.id === 'board' ? { onPointerEnter: prefetchBoard, onFocus: prefetchBoard } : {})}
              >
                {p.text}
              </Button>
            ))}
            {toolbox === 'hidden' && approvals.pending.length === 0 && (
              <Button ref={showToolbox} size="sm" variant="ghost" onClick={() => setToolbox('collapsed')} aria-label="Show toolbox">
                Tools
              </Button>
            )}
            <ThemeToggle />
          </div>
        </header>
        <SessionHeaderBar sessionKey={sessionKey} />
        <DeferredPart id="transcript">
          <TranscriptView sessionKey={sessionKey} />
        </DeferredPart>
        <Composer sessionKey={sessionKey} />
        <StatusBar sessionKey={sessionKey} running={running} />
      </main>
      <DeferredPart id="panels">
        <ToolboxPanel sessionKey={sessionKey} approvals={approvals} />
      </DeferredPart>
    </div>
  );
}

/** Opens the next session with a pending item (also key n). */
function NextNeedingInputButton() {
  const { next, go, pending } = useNextNeedingInput();
  return (
    <Button size="sm" variant="ghost" aria-label="Next needing input" title="Next needing input (n)" data-testid="next-needing-input" data-count={pending} disabled={!next} onClick={go}>
      Next
    </Button>
  );
}
