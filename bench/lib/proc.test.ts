import { describe, expect, it } from 'vitest';
import { commandLabel, cpuTicks, parseStat, procStat, processTree } from './proc';

describe('/proc/<pid>/stat', () => {
  it('reads the fields after the last ")", whatever the command name holds', () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
    const s = parseStat('4242 (we(ird) name) S) R 17 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 1 0 12345\n');
    expect(s).toEqual({ comm: 'we(ird) name) S', ppid: 17, ticks: 281 });
  });

  it('this process: its parent, its CPU ticks; undefined once gone', () => {
    const s = procStat(process.pid)!;
    expect(s.ppid).toBe(process.ppid);
    expect(s.comm.length).toBeGreaterThan(0);
    expect(Number.isInteger(s.ticks) && s.ticks >= 0).toBe(true);
    expect(procStat(2 ** 30)).toBeUndefined();
    expect(cpuTicks([process.pid, 2 ** 30])).toBeGreaterThanOrEqual(s.ticks);
    expect(processTree(process.ppid)).toContain(process.pid);
  });
});

describe('a command line in a report', () => {
  it('names the program by its file, shows paths under the folder relative to it, and keeps every flag whole', () => {
    const argv = ['/work/main/node_modules/node/bin/node', '--max-semi-space-size=4', '/work/main/scripts/start.mjs', '/tmp/x'];
    expect(commandLabel(argv, '/work/main')).toBe('node --max-semi-space-size=4 scripts/start.mjs /tmp/x');
    expect(commandLabel(['next-server (v16.0.0)'], '/work/main')).toBe('next-server (v16.0.0)');
    expect(commandLabel(['node', 'x'.repeat(200)]).length).toBe(100);
  });
});
