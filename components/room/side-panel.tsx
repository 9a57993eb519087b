'use client';
// The right-hand drawer: the agent board, the agent picker or the event inspector (an overlay on narrow windows, where it
// takes the focus while open). Escape closes it and gives the focus back to the button that opened it. It stays mounted
// across session switches (the board keeps its scroll and focus); the picker and the inspector start fresh per session.
import { OVERLAY_MEDIA } from '@/stores/room-store';
import { useRoomStore } from '@/stores/room-store-provider';
import { type ReactNode, useEffect, useRef } from 'react';
import { AgentBoard } from '../board/agent-board';
import { AgentPicker } from '../delegates/agent-picker';
import { EventInspector } from '../inspector/event-inspector';

const LABELS = { board: 'Agent board panel', agents: 'Agent picker panel', events: 'Event inspector panel' } as const;

export function SidePanel({ sessionKey }: { sessionKey: string }) {
  const panel = useRoomStore((s) => s.panel);
  if (panel === 'none') return null;
  return (
    <Drawer key={panel} label={LABELS[panel]} panel={panel}>
      {panel === 'board' ? <AgentBoard /> : panel === 'agents' ? <AgentPicker key={sessionKey} sessionKey={sessionKey} /> : <EventInspector key={sessionKey} sessionKey={sessionKey} />}
    </Drawer>
  );
}

function Drawer({ label, panel, children }: { label: string; panel: string; children: ReactNode }) {
  const closePanel = useRoomStore((s) => s.closePanel);
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    // Covering the room, it takes the focus (before, the focus stayed on the room hidden behind it).
    if (window.matchMedia(OVERLAY_MEDIA).matches) ref.current?.focus();
    const drawer = ref.current;
    return () => {
      // Closed with the focus inside it (now gone with it): back to the button that opened it.
      // The opener went with the session it was in (the pane is keyed by session): the open session's own toggle.
      const active = document.activeElement;
      const back = opener?.isConnected ? opener : document.querySelector<HTMLElement>(`[data-panel-toggle="${panel}"]`);
      if (back && (!active || active === document.body || drawer?.contains(active))) back.focus();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return (
    <aside
      ref={ref}
      aria-label={label}
      data-testid="side-panel"
      data-panel={panel}
      tabIndex={-1}
      onKeyDown={(e) => {
        if (e.key !== 'Escape' || e.defaultPrevented) return;
        e.preventDefault();
        closePanel();
      }}
      className="fixed inset-0 z-30 flex flex-col bg-white outline-none md:static md:z-auto md:w-80 md:shrink-0 xl:w-96 md:border-l md:border-zinc-200 dark:bg-zinc-950 md:dark:border-zinc-800"
    >
      {children}
    </aside>
  );
}
