'use client';
// A link to another session (where an inter-session or callback row came from): a real href, opened in place.
import { useRoomStore } from '@/stores/room-store-provider';

export function SessionLink({ sessionKey, className }: { sessionKey: string; className?: string }) {
  const selectSession = useRoomStore((s) => s.selectSession);
  return (
    <a
      href={`/?session=${encodeURIComponent(sessionKey)}`}
      data-testid="session-link"
      aria-label={`Open session ${sessionKey}`}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return; // a new tab keeps its default
        e.preventDefault();
        selectSession(sessionKey);
      }}
      className={className ?? 'font-mono text-indigo-700 underline decoration-dotted underline-offset-2 hover:decoration-solid dark:text-indigo-300'}
    >
      {sessionKey}
    </a>
  );
}
