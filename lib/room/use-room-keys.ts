// Room-wide keyboard: j/k move through the sidebar's sessions (never while typing in a field).
import { useRoomStore } from '@/stores/room-store-provider';
import { useEffect } from 'react';
import { stepSession } from './sidebar';
import { useSidebarSessions } from './use-sidebar';

export function isTypingTarget(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
}

export function useRoomKeys() {
  const { order } = useSidebarSessions();
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const selectSession = useRoomStore((s) => s.selectSession);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.metaKey || e.ctrlKey || e.altKey || isTypingTarget(e.target)) return;
      if (e.key !== 'j' && e.key !== 'k') return;
      const next = stepSession(order, selected, e.key === 'j' ? 1 : -1);
      if (next && next !== selected) {
        e.preventDefault();
        selectSession(next);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [order, selected, selectSession]);
}
