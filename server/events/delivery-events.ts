// `delivery` events (CONTRACT §4, §9): each state a delivery reaches, on the stream of both its ends' sessions.
import crypto from 'node:crypto';
import type { DeliveryChange } from '../store/deliveries';
import { toDelivery } from '../store/deliveries';
import type { EventBus } from './bus';

/** What boot hangs on `Store.onDeliveries`: one event per state reached, per session end (sender and target). */
export function deliveryEmitter(bus: EventBus, onError: (e: unknown) => void): (changes: DeliveryChange[]) => void {
  return (changes) => {
    for (const c of changes) {
      const d = toDelivery(c.row);
      const ends = [...new Set([c.row.from_session, c.row.to_session].filter((k): k is string => !!k))];
      for (const state of c.states) {
        const data = { phase: state, deliveryId: d.deliveryId, kind: d.kind, state, from: d.from, to: d.to, ...(d.runId ? { runId: d.runId } : {}), attempts: d.attempts, ...(state === c.row.state && d.error ? { error: d.error } : {}) };
        for (const sessionKey of ends) {
          // Outside any run: a one-off id (as transcript.ts does for rows written outside runs), seq 1.
          const id = `evt_${crypto.randomUUID()}`;
          try {
            bus.registerRun(id, sessionKey, 0);
            bus.emit(id, 'delivery', data);
          } catch (e) {
            onError(e);
          } finally {
            bus.unregisterRun(id);
          }
        }
      }
    }
  };
}
