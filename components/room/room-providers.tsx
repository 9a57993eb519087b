'use client';
// Client providers for the room: tRPC + TanStack Query, and the per-request UI store.
import { TRPCReactProvider } from '@/lib/trpc/client';
import { RoomStoreProvider } from '@/stores/room-store-provider';
import type { RoomInit } from '@/stores/room-store';
import type { ReactNode } from 'react';

export function RoomProviders({ init, children }: { init: RoomInit; children: ReactNode }) {
  return (
    <TRPCReactProvider>
      <RoomStoreProvider init={init}>{children}</RoomStoreProvider>
    </TRPCReactProvider>
  );
}
