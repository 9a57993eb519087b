// Processes read from /proc (Linux only): a process tree, its resident memory and CPU time.
import fs from 'node:fs';
import path from 'node:path';

/** Clock ticks per second of the times in /proc/<pid>/stat (`getconf CLK_TCK`: 100 on Linux). */
export const CLK_TCK = 100;

export interface ProcStat {
  /** The command name (field 2, without its parentheses). */
  comm: string;
  ppid: number;
  /** CPU time used so far, utime + stime (fields 14 and 15), in clock ticks. */
  ticks: number;
}

/** Parses the text of /proc/<pid>/stat. */
export function parseStat(stat: string): ProcStat {
  // The command name may hold spaces and parentheses: fields resume after the last ')'.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
}

/** One process's /proc/<pid>/stat, or undefined when it is gone. */
export function procStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Every pid in /proc right now. */
function allPids(): number[] {
  return fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number);
}

/** CPU ticks used so far by these processes together (one that is gone counts 0). */
export function cpuTicks(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (procStat(pid)?.ticks ?? 0), 0);
}

/** CPU ticks used so far by each PostgreSQL server process on this machine (backends, WAL writer, …), by pid. */
export function postgresTicks(): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of allPids()) {
    const stat = procStat(pid);
    if (stat?.comm === 'postgres') out.set(pid, stat.ticks);
  }
  return out;
}

/** `root` and every live descendant. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const ppid = procStat(pid)?.ppid;
    if (ppid === undefined) continue;
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (!fs.existsSync(`/proc/${pid}`)) continue;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** VmRSS of one process in kB (0 when it is gone). */
export function vmRssKb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export interface TreeRss {
  totalKb: number;
  processes: Array<{ pid: number; rssKb: number; name: string }>;
}

/**
 * A command line as a report shows it: the program by its file name, paths under `cwd` relative to it, the rest as
 * given (`/work/main/node_modules/node/bin/node --max-semi-space-size=4 /work/main/scripts/start.mjs` →
 * `node --max-semi-space-size=4 scripts/start.mjs`), at most 100 characters.
 */
export function commandLabel(argv: string[], cwd = process.cwd()): string {
  const [program = '?', ...args] = argv;
  const short = (a: string) => (path.isAbsolute(a) && a.startsWith(cwd + path.sep) ? path.relative(cwd, a) : a);
  return [path.basename(program), ...args.map(short)].join(' ').slice(0, 100);
}

/** The command line (what `ps` shows; Next renames its process to "next-server (vX)"), shortened. */
function nameOf(pid: number): string {
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return argv.length ? commandLabel(argv) : fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Sum of VmRSS over the process tree rooted at `root` (shared pages are counted once per process). */
export function treeRss(root: number): TreeRss {
  const processes = processTree(root).map((pid) => ({ pid, rssKb: vmRssKb(pid), name: nameOf(pid) }));
  return { totalKb: processes.reduce((s, p) => s + p.rssKb, 0), processes };
}
