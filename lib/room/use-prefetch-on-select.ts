// A session switch asks for the new session's newest transcript page the moment the selection changes (click, j/k,
// a link), not once the new pane has rendered and mounted its query: the request is on its way while React renders.
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStoreApi } from '@/stores/room-store-provider';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { transcriptQueryOptions } from './use-transcript';

export function usePrefetchOnSelect() {
  const store = useRoomStoreApi();
  const trpc = useTRPC();
  const qc = useQueryClient();
  useEffect(
    () =>
      store.subscribe((s, prev) => {
        if (s.selectedSessionKey === prev.selectedSessionKey) return;
        // The pane's own query (useTranscript) finds this fetch in flight and waits for it instead of sending another.
        void qc.prefetchInfiniteQuery(transcriptQueryOptions(trpc, s.selectedSessionKey));
      }),
    [store, trpc, qc],
  );
}
