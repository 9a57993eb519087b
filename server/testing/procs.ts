// Test helper: whether a process is still running, by /proc (a zombie or a dead task waiting to be reaped is not).
import fs from 'node:fs';

export function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
