// The end of an exec command's process tree never holds the gateway's event loop: no /proc scan in a PID namespace,
// and elsewhere scans that give the loop turns, with pauses between their rounds (exec-tree.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { parseRawConfig, resolveConfig } from '../config';
import { until } from '../testing/harness';
import { createExecTool } from './exec';
import { pidNamespace } from './exec-namespace';
import { ProcessTree } from './exec-tree';

const namespaced = 'unshare' in (await pidNamespace());
const PERL = ['/usr/bin/perl', '/bin/perl'].find((f) => fs.existsSync(f));
// Small, as forks are slow on some machines (~30 a second on a test VM); the probe's was 19,000 children of 1,000 fds.
const FDS = 500;
const CHILDREN = 60;

/**
 * The probe's command, smaller: perl opens up to `fds` files, then forks `children` that leave its session and sleep,
 * each holding those files (slow to die, and many fds to look at); all named `name` in /proc. With `closeMarker` the
 * children close fd 3 (the command's marker) and perl sleeps on; without, they keep it and perl exits, so only the
 * marker finds them. Prints "ready" once all are forked.
 */
const forker = (name: string, closeMarker: boolean) =>
  `${PERL} -MPOSIX -e '$0 = "${name}"; my @h; for (1..${FDS}) { open(my $h, "<", "/dev/null") or last; push @h, $h } ` +
  `for (1..${CHILDREN}) { my $p = fork; last unless defined $p; if (!$p) { POSIX::setsid(); ${closeMarker ? 'POSIX::close(3); ' : ''}sleep 600; exit 0 } } ` +
  `$| = 1; print "ready\\n"; ${closeMarker ? 'sleep 600' : 'exit 0'}'`;

/** Live pids whose command line is `name` (as perl's $0 sets it). */
function named(name: string): number[] {
  const found: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0+$/, '') === name && !/^\d+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${d}/stat`, 'utf8'))) found.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return found;
}

/** The event loop's worst turn while it runs: the longest gap between ticks of a 5 ms timer, in ms. */
function loopMonitor() {
  let worst = 0;
  let last = performance.now();
  const t = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  return () => {
    clearInterval(t);
    return worst;
  };
}

const names: string[] = [];
const name = (what: string) => {
  const n = `ct-tree-${what}-${process.pid}-${Date.now()}`;
  names.push(n);
  return n;
};
afterEach(() => vi.restoreAllMocks());
afterAll(() => {
  for (const n of names) for (const pid of named(n)) process.kill(pid, 'SIGKILL');
});

describe.runIf(PERL && process.platform === 'linux')('the end of a big process tree', () => {
  // Before: up to 50 rounds, back to back, each a scan of all of /proc and of the fds of every process not found
  // otherwise; the probe's 19,000 children of 1,000 fds, slow to die, held the gateway 7.8 s.
  it.runIf(namespaced)('in a PID namespace, on cancel: no scan of /proc at all, the loop keeps turning, and every process ends', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-exec-tree-'));
    fs.chmodSync(dir, 0o755); // as root, exec runs as nobody, who must enter the workspace under it
    const n = name('ns');
    try {
      const config = resolveConfig(parseRawConfig({}), { CROSSTALK_DATA_DIR: path.join(dir, 'data'), CROSSTALK_WORKSPACES: path.join(dir, 'ws') });
      const ac = new AbortController();
      const ctx = { agent: config.agents[0]!, signal: ac.signal, runId: 'r', sessionKey: 'agent:main:main', callId: 'c' };
      const scans = vi.spyOn(ProcessTree.prototype, 'members');
      const result = createExecTool().execute({ command: forker(n, true), timeoutSeconds: 120 }, ctx as never);
      await until(() => named(n).length === CHILDREN + 1, 30_000);
      const worst = loopMonitor();
      ac.abort(); // the timer's end is the same call (tree.kill())
      const r = await result;
      const lag = worst();
      expect(r).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
      expect(scans).not.toHaveBeenCalled();
      expect(lag).toBeLessThan(1000); // a guard only: at this size the old rounds took ~0.2 s; what tells is the count of scans
      await until(() => named(n).length === 0, 20_000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('without one: kill() gives the loop turns within each scan and between rounds, and ends what the marker finds', async () => {
    const n = name('plain');
    const tree = new ProcessTree(false);
    const child = spawn('/bin/sh', ['-c', forker(n, false)], { stdio: ['ignore', 'pipe', 'ignore', tree.markerFd], detached: true });
    tree.started(child.pid!);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    await until(() => out.includes('ready') && named(n).length === CHILDREN, 30_000);
    // Turns of the loop, counted by an immediate that re-arms itself; each scan notes the count it starts at.
    let turns = 0;
    let spin: NodeJS.Immediate | undefined;
    const turn = () => {
      turns++;
      spin = setImmediate(turn);
    };
    turn();
    const startedAt: number[] = [];
    const members = tree.members.bind(tree);
    vi.spyOn(tree, 'members').mockImplementation(() => {
      startedAt.push(turns);
      return members();
    });
    const worst = loopMonitor();
    const t0 = turns;
    try {
      await tree.kill();
    } finally {
      clearImmediate(spin);
    }
    const lag = worst();
    expect(startedAt.length).toBeGreaterThanOrEqual(2); // a round that killed, and one that found none left
    expect(startedAt[0]).toBe(t0);
    for (let i = 1; i < startedAt.length; i++) expect(startedAt[i]).toBeGreaterThan(startedAt[i - 1]!);
    expect(lag).toBeLessThan(1000);
    await until(() => named(n).length === 0, 20_000);
    await tree.close();
  }, 60_000);
});
