// "Next needing input" (CONTRACT §7): the next session, after the open one, with a pending item (oldest first), and key n.
import { useInbox } from '@/lib/room/use-inbox';
import { useRoomStore } from '@/stores/room-store-provider';
import { useCallback, useEffect } from 'react';
import { isTypingTarget } from './use-room-keys';

/** Sessions with pending items, in the order their oldest item was asked; the one after `current`, cycling. */
export function nextNeedingInput(sessions: string[], current: string): string | null {
  if (sessions.length === 0) return null;
  const at = sessions.indexOf(current);
  return sessions[(at + 1) % sessions.length] ?? null;
}

export function useNextNeedingInput() {
  const { approvals } = useInbox();
  const selected = useRoomStore((s) => s.selectedSessionKey);
  const selectSession = useRoomStore((s) => s.selectSession);
  const sessions = [...new Set(approvals.map((a) => a.sessionKey))];
  const next = nextNeedingInput(sessions, selected);
  const go = useCallback(() => {
    if (next) selectSession(next);
  }, [next, selectSession]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'n' || e.defaultPrevented || e.metaKey || e.ctrlKey || e.altKey || isTypingTarget(e.target)) return;
      if (!next) return;
      e.preventDefault();
      go();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [next, go]);
  return { next, go, pending: sessions.length };
}
