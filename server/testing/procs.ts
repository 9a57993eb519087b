// Test helpers over /proc: whether a process is still running (a zombie or a dead task waiting to be reaped is not),
// and the running `sleep <mark>` processes a test's command started (found by command line, wherever they went).
import fs from 'node:fs';

export function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Live pids (as this process sees them) whose command line is `sleep <mark>`. */
export function sleepers(mark: string): number[] {
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8') === `sleep\0${mark}\0` && isRunning(Number(d))) pids.push(Number(d));
    } catch {
      // gone while read
    }
  }
  return pids;
}
