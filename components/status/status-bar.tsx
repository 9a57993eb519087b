'use client';
// Connection state: a quiet status line, and a clear banner while the live event stream is down.
import { cn } from '@/lib/cn';
import { connectionText, SIGNED_OUT } from '@/lib/room/connection-text';
import { useRoomStore } from '@/stores/room-store-provider';
import { Button } from '../ui/button';
import { Spinner } from '../ui/spinner';

const LABEL = { connecting: 'Connecting…', connected: 'Live', reconnecting: 'Reconnecting…', error: 'Disconnected' } as const;

/**
 * The store's `connectionError` is already a plain sentence (lib/room/connection-text.ts); signed out, the way back is
 * signing in, not Retry (the stream would be refused again).
 */
export function ConnectionBanner({ onRetry }: { onRetry: () => void }) {
  const connection = useRoomStore((s) => s.connection);
  const error = useRoomStore((s) => s.connectionError);
  if (connection !== 'reconnecting' && connection !== 'error') return null;
  const text = error ?? connectionText(connection, null);
  return (
    <div
      role="alert"
      data-testid="connection-banner"
      className="flex shrink-0 items-center gap-3 bg-rose-600 px-4 py-1.5 text-sm text-white"
    >
      <span className="font-medium">{connection === 'error' ? 'Live updates stopped.' : 'Connection lost.'}</span>
      <span className="truncate text-rose-100">{text}</span>
      {text === SIGNED_OUT ? (
        <a href="/" className="ml-auto shrink-0 rounded-md bg-white px-2 py-1 text-xs font-medium text-rose-700 hover:bg-rose-50">
          Sign in
        </a>
      ) : (
        connection === 'error' && (
          <Button size="sm" className="ml-auto" onClick={onRetry}>
            Retry
          </Button>
        )
      )}
    </div>
  );
}

export function StatusBar({ sessionKey, running }: { sessionKey: string; running: boolean }) {
  const connection = useRoomStore((s) => s.connection);
  return (
    <footer
      data-testid="status-bar"
      data-connection={connection}
      className="flex h-7 shrink-0 items-center gap-3 border-t border-zinc-200 bg-zinc-50 px-3 text-[11px] text-zinc-600 dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-400"
    >
      <span className="flex items-center gap-1.5" data-testid="connection-state">
        <span
          aria-hidden
          className={cn(
            'size-2 rounded-full',
            connection === 'connected' ? 'bg-emerald-500' : connection === 'connecting' ? 'bg-zinc-400' : 'bg-rose-500',
          )}
        />
        {LABEL[connection]}
      </span>
      <span className="hidden min-w-0 truncate font-mono sm:inline">{sessionKey}</span>
      {running && (
        <span data-testid="run-active" className="flex shrink-0 items-center gap-1.5">
          <Spinner label="Agent is working" className="size-2" />
          agent is working…
        </span>
      )}
    </footer>
  );
}
