// The gateway's helper threads below its event loop in the CPU scheduler (Linux): V8's GC and compiler workers, libuv's
// pool (compression, files), the pages' worker, the search and checkpoint workers. On a machine with few cores their
// bursts preempted the loop, which serves every live stream and request (issue 24.2, BENCHMARKS.md "Stop 50").
import fs from 'node:fs';
import os from 'node:os';
import { isMainThread } from 'node:worker_threads';

/** The nice value given to helper threads: CROSSTALK_HELPER_NICE (0 turns this off), else 10. */
export const helperNice = (env = process.env) => {
  const n = Number(env.CROSSTALK_HELPER_NICE ?? 10);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 19) : 0;
};

/** Whether there is anything to do: Linux (a thread id names one thread there), the main thread, a nice above 0. */
const applies = (nice) => process.platform === 'linux' && isMainThread && nice > 0;

/**
 * Raises the nice value of every thread of this process but the main one (the event loop) to `nice`, where it is
 * lower; returns how many threads it changed. On Linux a thread id given to setpriority(2) names that thread alone.
 * Only ever lowers a priority, which needs no privilege; a thread that ended meanwhile is skipped. Elsewhere, off
 * the main thread, or with `nice` 0: nothing.
 */
export function lowerHelperThreads(nice = helperNice()) {
  if (!applies(nice)) return 0;
  let tids;
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  let changed = 0;
  for (const t of tids) {
    const tid = Number(t);
    if (tid === process.pid) continue; // the main thread's id is the process id
    try {
      if (os.getPriority(tid) >= nice) continue;
      os.setPriority(tid, nice);
      changed++;
    } catch {
      // ended between the listing and here
    }
  }
  return changed;
}

/**
 * Keeps helper threads low: now, and every `everyMs` for threads started later (a worker thread, libuv's pool on its
 * first use). A scan reads one directory and asks one priority per thread (~15). Returns a function that stops it.
 */
export function keepHelpersLow({ nice = helperNice(), everyMs = 2000 } = {}) {
  if (!applies(nice)) return () => {};
  lowerHelperThreads(nice);
  const timer = setInterval(() => lowerHelperThreads(nice), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
