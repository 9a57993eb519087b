// The agent board's query, asked for before the board opens: on the "Board" button's hover or focus, and once when the
// room is idle after its live stream is up — so a click shows the groups from the cache while the board asks again.
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStoreApi } from '@/stores/room-store-provider';
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect } from 'react';

/** How often the open board asks again (runs of other sessions send no events to this tab). */
export const BOARD_POLL_MS = 1_000;
/** The idle prefetch waits at most this long after the live stream is up. */
const IDLE_WITHIN_MS = 300;
/** A prefetched board younger than this is not asked for again by another hover. */
const PREFETCH_FRESH_MS = 5_000;

/** The board's query (`status.board`, CONTRACT §3 runs.board), shared by the board and its prefetch. */
export function useBoardQueryOptions(enabled = true) {
  const trpc = useTRPC();
  return trpc.status.board.queryOptions({}, { enabled, refetchInterval: BOARD_POLL_MS, staleTime: 0 });
}

/** Returns the prefetch for the button's hover/focus, and prefetches once when the room goes idle after connecting. */
export function usePrefetchBoard(): () => void {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const store = useRoomStoreApi();
  const prefetch = useCallback(() => void qc.prefetchQuery({ ...trpc.status.board.queryOptions({}), staleTime: PREFETCH_FRESH_MS }), [qc, trpc]);
  useEffect(() => {
    let handle: number | undefined;
    let done = false;
    const idle = window.requestIdleCallback ?? ((fn: () => void) => window.setTimeout(fn, IDLE_WITHIN_MS));
    const cancel = window.cancelIdleCallback ?? window.clearTimeout;
    const check = (s: { connection: string }) => {
      if (done || s.connection !== 'connected') return;
      done = true;
      // Soon after: with runs streaming the room is seldom idle, and a board opened before the prefetch lands waits for it.
      handle = idle(prefetch, { timeout: IDLE_WITHIN_MS });
    };
    check(store.getState());
    const unsubscribe = store.subscribe(check);
    return () => {
      unsubscribe();
      if (handle !== undefined) cancel(handle);
    };
  }, [store, prefetch]);
  return prefetch;
}
