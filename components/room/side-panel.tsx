'use client';
// The right-hand drawer: the agent board, the agent picker or the event inspector (an overlay on narrow windows).
import { useRoomStore } from '@/stores/room-store-provider';
import { AgentBoard } from '../board/agent-board';
import { AgentPicker } from '../delegates/agent-picker';
import { EventInspector } from '../inspector/event-inspector';

const LABELS = { board: 'Agent board panel', agents: 'Agent picker panel', events: 'Event inspector panel' } as const;

export function SidePanel({ sessionKey }: { sessionKey: string }) {
  const panel = useRoomStore((s) => s.panel);
  if (panel === 'none') return null;
  return (
    <aside
      aria-label={LABELS[panel]}
      data-testid="side-panel"
      data-panel={panel}
      className="fixed inset-0 z-30 flex flex-col bg-white md:static md:z-auto md:w-80 md:shrink-0 xl:w-96 md:border-l md:border-zinc-200 dark:bg-zinc-950 md:dark:border-zinc-800"
    >
      {panel === 'board' ? <AgentBoard /> : panel === 'agents' ? <AgentPicker sessionKey={sessionKey} /> : <EventInspector sessionKey={sessionKey} />}
    </aside>
  );
}
