'use client';
// Per-request zustand store behind a React context (zustand's Next.js guide): no state shared across requests.
import { createContext, useContext, useState, type ReactNode } from 'react';
import { useStore } from 'zustand';
import { createRoomStore, type RoomInit, type RoomStore } from './room-store';

type RoomStoreApi = ReturnType<typeof createRoomStore>;

const RoomStoreContext = createContext<RoomStoreApi | null>(null);

export function RoomStoreProvider({ init, children }: { init: RoomInit; children: ReactNode }) {
  const [store] = useState(() => createRoomStore(init));
  return <RoomStoreContext.Provider value={store}>{children}</RoomStoreContext.Provider>;
}

/** The store itself, for code that reacts to a change as it is made (before React renders it). */
export function useRoomStoreApi(): RoomStoreApi {
  const store = useContext(RoomStoreContext);
  if (!store) throw new Error('useRoomStoreApi must be used inside <RoomStoreProvider>');
  return store;
}

export function useRoomStore<T>(selector: (s: RoomStore) => T): T {
  const store = useContext(RoomStoreContext);
  if (!store) throw new Error('useRoomStore must be used inside <RoomStoreProvider>');
  return useStore(store, selector);
}
