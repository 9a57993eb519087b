// A graceful stop on SIGTERM/SIGINT: no new work, what ends within CROSSTALK_SHUTDOWN_GRACE_MS finishes, the rest is handed over.
import type { FullRuntime } from './runtime-types';
import type { Served } from './http/node-server';
import { envNumber } from './env-number.mjs';

/**
 * CROSSTALK_SHUTDOWN_GRACE_MS (default 3000): how long a stopping process lets its runs and requests finish. The rule
 * is `npm start`'s too (server/env-number.mjs); a bad value stopped the start (config resolution), so it is not met here.
 */
export function shutdownGraceMs(env: Record<string, string | undefined> = process.env): number {
  return envNumber('CROSSTALK_SHUTDOWN_GRACE_MS', env);
}

/**
 * Stops a process without aborting anything a client sent: the server stops accepting (event streams end; their
 * clients resume elsewhere by Last-Event-ID), runs that end within the grace finish here, the others are stopped
 * between steps and their sessions let go (PostgreSQL: the other processes take them over at once; SQLite: the next
 * start does). Requests in flight are answered: a wait for a run that goes on elsewhere follows it there until the
 * grace is over, then answers `timeout` (the run goes on).
 */
export async function gracefulStop(rt: FullRuntime, srv: Served | null, graceMs = shutdownGraceMs()): Promise<void> {
  const end = Date.now() + graceMs;
  await srv?.stopAccepting();
  await rt.orchestrator.shutdown({ graceMs });
  if (srv) await srv.drained(Math.max(0, end - Date.now()));
  rt.orchestrator.endWaits();
  if (srv) {
    await srv.drained(1000);
    await srv.close();
  }
  await rt.close();
}

/** SIGTERM and SIGINT stop gracefully; a second signal exits at once. */
export function stopOnSignals(rt: FullRuntime, srv: Served | null, exit: (code: number) => void = (c) => process.exit(c)): void {
  let stopping = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping) return exit(sig === 'SIGINT' ? 130 : 143);
    stopping = true;
    gracefulStop(rt, srv).then(
      () => exit(0),
      (e) => {
        rt.log.error({ err: e }, 'graceful stop failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
