// An exec command's whole process tree, and its end: process group, session, descendants, and whatever still holds the command's marker fd.
//
// The shell is spawned in a session of its own, so its process group and session hold what it starts; a
// `setsid` grandchild leaves both, and once its parent exits it is no longer a descendant either. What it
// keeps is its open files: every process of the command inherits fd 3, an anonymous (unlinked) file unique to
// the command, so a scan of /proc finds it wherever it went. A command that closes fd 3 *and* calls setsid
// escapes; README's Security section says so.
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

/** Whether a process has a file open whose (dev, ino) is the marker's. */
function holds(pid: number, dev: number, ino: number): boolean {
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
  }
  return false;
}

/** One command's process tree: `markerFd` goes to the shell as fd 3; `kill()` ends everything that belongs to it. */
export class ProcessTree {
  readonly markerFd: number;
  private readonly dev: number;
  private readonly ino: number;
  private root = 0;
  private rootStart = 0;

  constructor() {
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
  members(): number[] {
    // Only processes started since the shell: a member cannot be older, and looking at each one's fds costs.
    const all = pids()
      .filter((p) => p !== process.pid)
      .map(procStat)
      .filter((s): s is Stat => s !== null && !s.zombie && s.start >= this.rootStart);
    const found = new Set<number>();
    // A pid stays taken while its group or session has a member; once it belongs to a newer process, ours are empty.
    const reused = all.some((s) => s.pid === this.root && s.start !== this.rootStart);
    if (this.root && !reused) for (const s of all) if (s.pid === this.root || s.pgrp === this.root || s.session === this.root) found.add(s.pid);
    for (const s of all) if (!found.has(s.pid) && holds(s.pid, this.dev, this.ino)) found.add(s.pid);
    // Descendants of any of them (a child that closed fd 3 but did not leave the tree).
    for (let grew = true; grew; ) {
      grew = false;
      for (const s of all) {
        if (!found.has(s.pid) && found.has(s.ppid)) {
          found.add(s.pid);
          grew = true;
        }
      }
    }
    return [...found];
  }

  /** SIGKILLs every member, again until none is left (one may fork between a scan and its kill). */
  kill(): void {
    // The group in one call while the shell (alive or not yet reaped) still holds its pid, so the group id is ours;
    // without /proc that is all there is to follow.
    const shell = procStat(this.root);
    if (this.root && (!HAS_PROC || shell?.start === this.rootStart)) {
      try {
        process.kill(-this.root, 'SIGKILL');
      } catch {
        /* the group is empty */
      }
    }
    for (let round = 0; round < 50; round++) {
      const victims = this.members();
      if (victims.length === 0) return;
      for (const pid of victims) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
  }

  /** Kills what is left and closes the marker. */
  close(): void {
    this.kill();
    try {
      fs.closeSync(this.markerFd);
    } catch {
      /* closed */
    }
  }
}
