// The one runtime per process: config, store, event log, orchestrator and gateway, created once (globalThis guard).
import type { CrosstalkConfig } from './config';
import type { Gateway } from './gateway/types';
import type { FullRuntime } from './boot';

export interface Runtime {
  config: CrosstalkConfig;
  /** The API token (CROSSTALK_TOKEN or the generated one in the data dir). */
  token: string;
  gateway: Gateway;
  close(): Promise<void>;
}

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
