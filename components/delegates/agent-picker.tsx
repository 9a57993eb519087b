'use client';
// The agent picker: the open session's delegate sessions as a tree from the parent, running first, with their actions.
import { errorText } from '@/lib/room/connection-text';
import { useDelegates } from '@/lib/room/use-delegates';
import { useSessionsList } from '@/lib/room/use-sessions';
import { useRoomStore } from '@/stores/room-store-provider';
import { Button } from '../ui/button';
import { DelegateItem } from './delegate-item';

const MAX_DEPTH = 4;

export function AgentPicker({ sessionKey }: { sessionKey: string }) {
  const closePanel = useRoomStore((s) => s.closePanel);
  return (
    <section aria-labelledby="agent-picker-heading" data-testid="agent-picker" className="flex min-h-0 flex-1 flex-col">
      <header className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-3 py-2 dark:border-zinc-800">
        <h2 id="agent-picker-heading" className="text-sm font-semibold">
          Agent picker
        </h2>
        <span className="truncate text-[11px] text-zinc-500">delegates of {sessionKey}</span>
        <Button size="sm" variant="ghost" className="ml-auto" aria-label="Close agent picker" onClick={closePanel}>
          ✕
        </Button>
      </header>
      <div className="min-h-0 flex-1 overflow-y-auto p-2">
        <DelegateTree parentKey={sessionKey} depth={0} />
      </div>
    </section>
  );
}

/** One level of the tree; a delegate with delegates of its own (per the sessions list) nests its children. */
function DelegateTree({ parentKey, depth }: { parentKey: string; depth: number }) {
  const q = useDelegates(parentKey);
  const sessions = useSessionsList();
  const hasChildren = (key: string) => sessions.sessions.some((s) => s.parentKey === key);

  if (q.isPending) return <p className="px-2 py-1 text-xs text-zinc-500">Loading delegates…</p>;
  if (q.isError) {
    // A session with no row yet has no delegates either.
    if (q.error.data?.code === 'unknown_session') return depth === 0 ? <Empty /> : null;
    return (
      <p role="alert" className="px-2 py-1 text-xs text-rose-600">
        Could not load delegates: {errorText(q.error)}
      </p>
    );
  }
  if (q.delegates.length === 0) return depth === 0 ? <Empty /> : null;
  return (
    <>
      <ul
        data-testid="delegate-tree"
        data-parent-key={parentKey}
        aria-label={depth === 0 ? 'Delegates' : `Delegates of ${parentKey}`}
        className={depth === 0 ? 'space-y-2' : 'mt-2 space-y-2 border-l border-zinc-200 pl-3 dark:border-zinc-800'}
      >
        {q.delegates.map((d) => (
          <DelegateItem key={d.conversation_id} parentKey={parentKey} delegate={d}>
            {depth + 1 < MAX_DEPTH && hasChildren(d.conversation_id) && <DelegateTree parentKey={d.conversation_id} depth={depth + 1} />}
          </DelegateItem>
        ))}
      </ul>
      {q.hasNextPage && (
        <Button size="sm" variant="ghost" className="mt-2" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          {q.isFetchingNextPage ? 'Loading…' : 'More delegates'}
        </Button>
      )}
    </>
  );
}

function Empty() {
  return (
    <p data-testid="delegates-empty" className="px-2 py-6 text-center text-xs text-zinc-500">
      No delegate sessions. An agent creates them with <code className="font-mono">delegate_agent</code>.
    </p>
  );
}
