// The one runtime per process: config, store, event log, orchestrator and gateway, created once (globalThis guard).
import type { FullRuntime } from './runtime-types';

export type { FullRuntime, Runtime } from './runtime-types';

const KEY = Symbol.for('crosstalk.runtime');
type Holder = { [KEY]?: Promise<FullRuntime> };

/** The process-wide runtime, started on first call (instrumentation.ts calls it at boot). */
export function getRuntime(): Promise<FullRuntime> {
  const g = globalThis as Holder;
  if (!g[KEY]) {
    g[KEY] = import('./boot').then((m) => m.bootRuntime());
    g[KEY].catch(() => {
      delete g[KEY];
    });
  }
  return g[KEY];
}
