// Subscribes to a session's agent events and folds them into the query cache (transcript, live state, approvals, inspector).
import { useTRPC } from '@/lib/trpc/client';
import type { AgentEvent, TranscriptMessage } from '@/lib/trpc/types';
import { useRoomStore } from '@/stores/room-store-provider';
import { useQueryClient } from '@tanstack/react-query';
import { useSubscription } from '@trpc/tanstack-react-query';
import { useMemo, useRef } from 'react';
import { connectionText } from './connection-text';
import { recordEvent } from './event-log';
import { applyLiveEvent, emptyLiveState, type LiveState } from './live-state';
import { historyInput } from './queries';
import { mergeMessage, type HistoryData } from './use-transcript';
import { liveStateKey } from './use-live-state';
import { patchSessionStatus, type SessionsData } from './sidebar';
import type { HydrationGate } from './hydration-gate';

/**
 * The last event cursor this page saw of each session. A session opened again resumes there while its cached live
 * state has a run in flight: started live, its streaming bubble went on from the words of before the switch and
 * silently skipped those sent meanwhile (w0…w88 w205…).
 */
const lastCursors = new Map<string, string>();

const DELEGATE_KINDS = new Set(['agent_callback_result', 'delegate_follow_up_started', 'delegate_follow_up_completed']);

function messageOf(ev: AgentEvent): TranscriptMessage | undefined {
  const m = (ev.data?.message ?? undefined) as TranscriptMessage | undefined;
  return m && typeof m.id === 'number' && typeof m.kind === 'string' ? m : undefined;
}

/**
 * `gate` holds the cache writes (events, the refetches of a (re)connect) until the room's deferred parts have hydrated:
 * written earlier, a part would hydrate with data the server did not render (see hydration-gate.ts). The connection
 * state is not held: the status bar is in the shell.
 */
export function useSessionEvents(sessionKey: string, gate: Pick<HydrationGate, 'run'>) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const setConnection = useRoomStore((s) => s.setConnection);
  const startedKey = useRef<string | null>(null);

  const historyKey = trpc.chat.history.infiniteQueryKey(historyInput(sessionKey));
  const approvalsKey = trpc.approvals.list.queryKey({ sessionKey });

  const refreshDelegates = () => {
    void qc.invalidateQueries({ queryKey: trpc.delegates.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.status.pathKey() });
    // A new delegate session is a new row in the sidebar's tree, under this one.
    void qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() });
  };

  const onEvent = (ev: AgentEvent) => {
    recordEvent(qc, sessionKey, ev);
    qc.setQueryData<LiveState>(liveStateKey(sessionKey), (old) => applyLiveEvent(old ?? emptyLiveState(), ev));
    const phase = ev.data?.phase;
    if (ev.stream === 'message') {
      const msg = messageOf(ev);
      if (msg) qc.setQueryData(historyKey, (old) => mergeMessage(old as HistoryData | undefined, msg) as typeof old);
      else void qc.invalidateQueries({ queryKey: historyKey });
      if (msg && DELEGATE_KINDS.has(msg.kind)) refreshDelegates();
    } else if (ev.stream === 'approval') {
      // Every approvals list: this session's and the inbox's.
      void qc.invalidateQueries({ queryKey: trpc.approvals.list.pathKey() });
      void qc.invalidateQueries({ queryKey: trpc.status.pathKey() });
      void qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() });
    } else if (ev.stream === 'delivery') {
      // A hand-off of this session moved on: its tool card's state (and a dead one on the board) are asked again.
      void qc.invalidateQueries({ queryKey: trpc.deliveries.forCall.pathKey() });
      if (phase === 'dead' || phase === 'accepted') void qc.invalidateQueries({ queryKey: trpc.status.board.pathKey() });
    } else if (ev.stream === 'tool' && ev.data?.name === 'delegate_agent' && (phase === 'start' || phase === 'end')) {
      // A delegate started or finished under this session: its row in the agent picker changed.
      refreshDelegates();
    } else if (ev.stream === 'lifecycle' && (phase === 'start' || phase === 'end' || phase === 'error')) {
      // Patch this session's row in the cached list instead of refetching every page of it per run: the list's own
      // poll reorders it. Only a session the list does not hold yet needs a refetch.
      let found = false;
      qc.setQueriesData<SessionsData>({ queryKey: trpc.sessions.list.pathKey() }, (old) => {
        const next = patchSessionStatus(old, sessionKey, phase === 'start' ? 'running' : 'idle', ev.ts);
        if (next !== old) found = true;
        return next;
      });
      if (!found) void qc.invalidateQueries({ queryKey: trpc.sessions.list.pathKey() });
      void qc.invalidateQueries({ queryKey: trpc.status.pathKey() });
      // Reconcile once a run settles: anything missed in the connect window shows up here.
      if (phase !== 'start') void qc.invalidateQueries({ queryKey: historyKey });
    }
  };

  // The connection state goes to the room store straight from the subscription's callbacks, and this hook reads
  // none of the subscription's state: "Live" is one small store update (the status bar alone re-renders), not a
  // re-render of the whole room (which forced the not yet hydrated <Activity> parts to hydrate first) followed by an
  // effect and a second render. `startedKey` is the session whose stream has started: "connecting" again for that
  // session is a reconnect, for a newly opened one a first connect.
  // Where the stream starts, fixed for each session opened: where this page left it when a run it was showing is in
  // flight; else at the session's run in flight, replayed from its first event (a reload mid-run showed only the
  // words sent after it), or live when there is none.
  const input = useMemo(() => {
    const cursor = lastCursors.get(sessionKey);
    const live = qc.getQueryData<LiveState>(liveStateKey(sessionKey));
    return cursor && live?.activeRuns.length ? { sessionKey, lastEventId: cursor } : { sessionKey, fromActiveRun: true };
  }, [qc, sessionKey]);
  const sub = useSubscription(
    trpc.events.onEvent.subscriptionOptions(
      input,
      {
        onStarted() {
          setConnection('connected');
          // The live stream starts now: refetch what may have changed before it (initial load race, or a reconnect
          // that the server could not replay), then let events carry the rest.
          const reconnect = startedKey.current === sessionKey;
          startedKey.current = sessionKey;
          gate.run(() => {
            if (reconnect) void qc.invalidateQueries({ queryKey: historyKey });
            void qc.invalidateQueries({ queryKey: approvalsKey });
            // The server answers again: what failed to load while it was away (the transcript, the session's model)
            // is asked for again, not left as an error until the next event.
            void qc.refetchQueries({ type: 'active', predicate: (q) => q.state.status === 'error' });
          });
        },
        // The banner reads a plain sentence (connection-text.ts), not the transport's "Unknown error" / "Failed to fetch".
        onConnectionStateChange(state) {
          if (state.state !== 'connecting') return;
          const next = startedKey.current === sessionKey ? 'reconnecting' : 'connecting';
          setConnection(next, state.error ? connectionText(next, state.error) : null);
        },
        onError(error) {
          setConnection('error', connectionText('error', error));
        },
        onData(tracked) {
          lastCursors.set(sessionKey, tracked.id);
          gate.run(() => onEvent(tracked.data as AgentEvent));
        },
      },
    ),
  );

  return { reset: sub.reset };
}
