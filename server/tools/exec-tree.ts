// An exec command's whole process tree, and its end: process group, session, descendants, and whatever still holds the command's marker fd.
//
// The shell is spawned in a session of its own, so its process group and session hold what it starts; a
// `setsid` grandchild leaves both, and once its parent exits it is no longer a descendant either. What it
// keeps is its open files: every process of the command inherits fd 3, an anonymous (unlinked) file unique to
// the command, so a scan of /proc finds it wherever it went. A command that closes fd 3 *and* calls setsid
// escapes; README's Security section says so. In exec's PID namespace (exec-namespace.ts) none of that is
// needed: killing the namespace's first process makes the kernel end every process in it, and no scan is made.
//
// The end never holds the gateway's event loop: a scan of /proc (every process's stat, and the fds of those not
// found otherwise) gives the loop a turn every few milliseconds, and the rounds after the first wait between them,
// longer each time. Before, up to 50 rounds ran back to back, synchronously: a command whose processes were slow to
// die (many open fds, thousands of setsid children) kept every round a full scan and stalled the gateway ~8 s.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Stat {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  zombie: boolean;
  /** Clock ticks after boot (field 22): nothing older than the shell belongs to its command. */
  start: number;
}

/** Fields of /proc/<pid>/stat (after the command name, which may hold spaces and parentheses). */
function procStat(pid: number): Stat | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), zombie: f[0] === 'Z' || f[0] === 'X', start: Number(f[19]) };
  } catch {
    return null; // gone
  }
}

const HAS_PROC = fs.existsSync('/proc/self/stat');

/** Every pid in /proc; none where there is no /proc (then only the process group is followed). */
function pids(): number[] {
  try {
    return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
  } catch {
    return [];
  }
}

/** Whether a process has a file open whose (dev, ino) is the marker's; `slice` gives the loop its turns on the way. */
async function holds(pid: number, dev: number, ino: number, slice: Slicer): Promise<boolean> {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone, or not ours to look at (then not ours to have started either)
  }
  for (const fd of fds) {
    try {
      const st = fs.statSync(`/proc/${pid}/fd/${fd}`);
      if (st.ino === ino && st.dev === dev) return true;
    } catch {
      /* closed meanwhile */
    }
    await slice.tick();
  }
  return false;
}

/** How long a scan runs before it gives the event loop a turn, in ms. */
const SLICE_MS = 5;
/** At most this many rounds of scan-and-kill, and for at most this long (a command forking as fast as it is killed). */
const MAX_ROUNDS = 50;
const MAX_KILL_MS = 10_000;
/** The pause after round n: 1, 2, 4 … ms, at most 100 ms. */
const pauseAfter = (round: number) => Math.min(2 ** round, 100);

/** Gives the event loop a turn when the work since the last one took SLICE_MS or more. */
class Slicer {
  private last = performance.now();
  async tick(): Promise<void> {
    if (performance.now() - this.last < SLICE_MS) return;
    await new Promise((r) => setImmediate(r));
    this.last = performance.now();
  }
}

/** A process's children (its only thread's: /proc/<pid>/task/<pid>/children); null where the kernel does not say (CONFIG_PROC_CHILDREN). */
function childrenOf(pid: number): number[] | null {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return null;
  }
}

function sigkill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/**
 * One command's process tree: `markerFd` goes to the shell as fd 3; `kill()` ends everything that belongs to it.
 * `namespaced`: the shell is exec's unshare, whose only child is the first process of the command's PID namespace.
 */
export class ProcessTree {
  readonly markerFd: number;
  private readonly dev: number;
  private readonly ino: number;
  private root = 0;
  private rootStart = 0;
  private killing: Promise<void> | undefined;

  constructor(readonly namespaced = false) {
    const file = path.join(os.tmpdir(), `crosstalk-exec-${crypto.randomBytes(8).toString('hex')}`);
    fs.closeSync(fs.openSync(/* turbopackIgnore: true */ file, 'wx', 0o400));
    this.markerFd = fs.openSync(/* turbopackIgnore: true */ file, 'r'); // read-only: an empty file the command cannot grow
    fs.unlinkSync(/* turbopackIgnore: true */ file);
    const st = fs.fstatSync(this.markerFd);
    this.dev = st.dev;
    this.ino = st.ino;
  }

  /** The shell's pid (its own session and process group leader). */
  started(pid: number) {
    this.root = pid;
    this.rootStart = procStat(pid)?.start ?? 0;
  }

  /** The command's live processes: same group or session as the shell, its descendants, and the marker's holders. */
  async members(): Promise<number[]> {
    const slice = new Slicer();
    // Only processes started since the shell: a member cannot be older, and looking at each one's fds costs.
    const all: Stat[] = [];
    for (const pid of pids()) {
      if (pid === process.pid) continue;
      const s = procStat(pid);
      if (s !== null && !s.zombie && s.start >= this.rootStart) all.push(s);
      await slice.tick();
    }
    const found = new Set<number>();
    // A pid stays taken while its group or session has a member; once it belongs to a newer process, ours are empty.
    const reused = all.some((s) => s.pid === this.root && s.start !== this.rootStart);
    if (this.root && !reused) for (const s of all) if (s.pid === this.root || s.pgrp === this.root || s.session === this.root) found.add(s.pid);
    // Descendants of any of them (a child that closed fd 3 but did not leave the tree).
    const descendants = () => {
      for (let grew = true; grew; ) {
        grew = false;
        for (const s of all) {
          if (!found.has(s.pid) && found.has(s.ppid)) {
            found.add(s.pid);
            grew = true;
          }
        }
      }
    };
    descendants(); // before the fds: a process found so needs no look at them
    let more = false;
    for (const s of all) {
      if (found.has(s.pid)) continue;
      if (await holds(s.pid, this.dev, this.ino, slice)) {
        found.add(s.pid);
        more = true;
      }
    }
    if (more) descendants();
    return [...found];
  }

  /**
   * SIGKILLs every member, again until none is left (one may fork between a scan and its kill); resolves then. In a
   * PID namespace: its first process (and the shell's group), no scan. Calls while one runs share it.
   */
  kill(): Promise<void> {
    return (this.killing ??= this.end().finally(() => (this.killing = undefined)));
  }

  private async end(): Promise<void> {
    // The group in one call while the shell (alive or not yet reaped) still holds its pid, so the group id is ours;
    // without /proc that is all there is to follow.
    const shell = procStat(this.root);
    const ours = this.root !== 0 && (!HAS_PROC || shell?.start === this.rootStart);
    if (this.namespaced) {
      // The namespace's first process, found while it is still the shell's child: the kernel ends the rest with it.
      const first = ours ? childrenOf(this.root) : [];
      for (const pid of first ?? []) sigkill(pid);
      if (ours) sigkill(-this.root);
      // The shell gone: so is the namespace (unshare exits after its first process, and with setpriv that process
      // dies with unshare, exec-namespace.ts). A shell with no child (yet, or any more), or a kernel that does not
      // list children: the rounds below, as elsewhere.
      if (!ours || first?.length) return;
    } else if (ours) sigkill(-this.root);
    const until = Date.now() + MAX_KILL_MS;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const victims = await this.members();
      if (victims.length === 0) return;
      for (const pid of victims) sigkill(pid);
      if (Date.now() >= until) return;
      await new Promise((r) => setTimeout(r, pauseAfter(round)));
    }
  }

  /** Kills what is left and closes the marker. */
  async close(): Promise<void> {
    await this.kill();
    try {
      fs.closeSync(this.markerFd);
    } catch {
      /* closed */
    }
  }
}
