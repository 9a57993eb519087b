// Marks a run's input as written to the transcript and tells whoever waits for that (the `agent` method).
import type { ActiveRun } from './types';

export function markStarted(run: ActiveRun): void {
  run.started = true;
  run.onStarted?.();
  run.onStarted = undefined;
}
