// Resident memory of a process and all its descendants, read from /proc (Linux only).
import fs from 'node:fs';

function parentOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields resume after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[1]);
  } catch {
    return undefined;
  }
}

/** `root` and every live descendant. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const ppid = parentOf(pid);
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

/** The command line (what `ps` shows; Next renames its process to "next-server (vX)"), shortened. */
function nameOf(pid: number): string {
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return (cmd || fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).slice(0, 60);
  } catch {
    return '?';
  }
}

/** Sum of VmRSS over the process tree rooted at `root` (shared pages are counted once per process). */
export function treeRss(root: number): TreeRss {
  const processes = processTree(root).map((pid) => ({ pid, rssKb: vmRssKb(pid), name: nameOf(pid) }));
  return { totalKb: processes.reduce((s, p) => s + p.rssKb, 0), processes };
}
