// Reading a V8 sampling heap profile (bench/lib/heap-sampler.mjs): bytes allocated by function, and by the nearest
// frame in code of our own or a package (what a load's allocations are for).
import { shortUrl, topLines } from './cpu-profile';
import { originalFrame } from './source-maps';

interface HeapNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number };
  selfSize: number;
  children: HeapNode[];
}
export interface HeapProfile {
  head: HeapNode;
}

const ours = (n: HeapNode) => !!n.callFrame.url && !n.callFrame.url.startsWith('node:');
const name = (n: HeapNode) => {
  const { functionName, url, lineNumber, columnNumber } = n.callFrame;
  // A built chunk's frame is named by its source (the function's start in the map: the minified name is useless).
  const o = originalFrame(url, lineNumber, columnNumber ?? 0);
  if (o) return `${functionName.length > 2 ? functionName : (o.name ?? '(anon)')} ${o.url}:${o.line}`;
  return `${functionName || '(anon)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
};

/** Sampled bytes: by the allocating function, by its nearest own-or-package caller, and by the chain of our callers (3 deep). */
export function heapTables(p: HeapProfile): { total: number; fn: Map<string, number>; caller: Map<string, number>; chain: Map<string, number> } {
  const fn = new Map<string, number>();
  const caller = new Map<string, number>();
  const chain = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, b: number) => m.set(k, (m.get(k) ?? 0) + b);
  let total = 0;
  const walk = (n: HeapNode, stack: HeapNode[]) => {
    if (n.selfSize) {
      total += n.selfSize;
      add(fn, name(n), n.selfSize);
      const own = [...stack, n].reverse().filter(ours);
      add(caller, own[0] ? name(own[0]) : name(n), n.selfSize);
      add(chain, own.slice(0, 3).map(name).join(' < ') || name(n), n.selfSize);
    }
    for (const c of n.children) walk(c, [...stack, n]);
  };
  walk(p.head, []);
  return { total, fn, caller, chain };
}

/** The k biggest entries as lines: share, MB, name. */
export const topBytes = (m: Map<string, number>, total: number, k: number): string[] => topLines(m, total, k, (b) => `${(b / 1048576).toFixed(1).padStart(7)} MB`);
