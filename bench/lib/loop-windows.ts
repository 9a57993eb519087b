// Reads what bench/lib/loop-probe.mjs wrote: the server's event-loop windows (every 100 ms, its longest gap).
import fs from 'node:fs';
import path from 'node:path';

export interface LoopWindow {
  /** Wall clock (Date.now()) at the window's end. */
  t: number;
  /** The loop's longest delay in the window, ms. */
  max: number;
  /** The window's longest garbage-collection pause, ms (0: none; absent in files written before the probe kept it). */
  gc?: number;
}

/**
 * Every window the probe wrote for `probe` (its files `<probe>.<pid>`, one per process that loaded it), ended within
 * [from, to] when given. `exceptPid`: a process's own file left out, unless it is the only one — the launcher
 * re-executes itself (scripts/secrets.mjs), so the server is the process that is not the launcher.
 */
export function loopWindows(probe: string, o: { from?: number; to?: number; exceptPid?: number } = {}): LoopWindow[] {
  const dir = path.dirname(probe);
  const base = path.basename(probe);
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(`${base}.`));
  const mine = o.exceptPid === undefined ? files : files.filter((f) => f !== `${base}.${o.exceptPid}`);
  const out: LoopWindow[] = [];
  for (const f of mine.length ? mine : files) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      const w = JSON.parse(line) as LoopWindow;
      if ((o.from === undefined || w.t >= o.from) && (o.to === undefined || w.t <= o.to)) out.push(w);
    }
  }
  return out;
}
