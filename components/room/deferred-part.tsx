'use client';
// A part of the room that hydrates after the shell (an <Activity> boundary) and tells the room's hydration gate when it has.
import { HydrationGate } from '@/lib/room/hydration-gate';
import { Activity, createContext, useContext, useEffect, useState, type ReactNode } from 'react';

/** Every deferred part the room renders: the gate opens once each has hydrated. */
export const DEFERRED_PARTS = ['sidebar', 'transcript', 'panels', 'approvals-dialog'] as const;
export type DeferredPartId = (typeof DEFERRED_PARTS)[number];
export type RoomHydrationGate = HydrationGate<DeferredPartId>;

const GateContext = createContext<RoomHydrationGate | null>(null);

/** The room's gate: one per room, closed until every deferred part has hydrated. */
export function useRoomHydrationGate(): RoomHydrationGate {
  const [gate] = useState(() => new HydrationGate(DEFERRED_PARTS));
  return gate;
}

/** Hands the room's gate to the deferred parts below. */
export const HydrationGateProvider = GateContext.Provider;

/**
 * `<Activity>` splits hydration: the shell (with the live event stream) commits first, the part in a later task (a
 * click on it hydrates it at once). Unlike Suspense, the server renders it inline, so nothing waits for a streamed reveal.
 */
export function DeferredPart({ id, children }: { id: DeferredPartId; children: ReactNode }) {
  return (
    <Activity>
      {children}
      <HydratedMark id={id} />
    </Activity>
  );
}

// Last in the boundary: its effect runs when the boundary's hydration commits, after its siblings' subscriptions.
function HydratedMark({ id }: { id: DeferredPartId }) {
  const gate = useContext(GateContext);
  useEffect(() => gate?.hydrated(id), [gate, id]);
  return null;
}
