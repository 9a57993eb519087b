// Reading a V8 CPU profile (--cpu-prof or the inspector's Profiler): self time per node, and the bench scripts' tables.
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTimes {
  byId: Map<number, ProfileNode>;
  /** Microseconds of samples whose top frame was this node. */
  self: Map<number, number>;
  /** All sampled microseconds. */
  total: number;
}

export function selfTimes(p: Profile): SelfTimes {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return { byId, self, total };
}

/**
 * Self time by function (`name file:line`, the file shortened by `shorten`) and by area: node_modules/<pkg>, a
 * node: builtin group, or the function's directory.
 */
export function byFunctionAndArea(t: SelfTimes, shorten: (url: string) => string): { fn: Map<string, number>; area: Map<string, number> } {
  const fn = new Map<string, number>();
  const area = new Map<string, number>();
  for (const [id, us] of t.self) {
    const { url, functionName, lineNumber } = t.byId.get(id)!.callFrame;
    const short = shorten(url);
    const name = `${functionName || '(anon)'} ${short}:${lineNumber}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const a = !url ? functionName || '(native)' : url.startsWith('node:') ? url.split('/').slice(0, 2).join('/') : (short.match(/^nm\/((@[^/]+\/)?[^/]+)/)?.[1] ?? short.replace(/\/[^/]*$/, ''));
    area.set(a, (area.get(a) ?? 0) + us);
  }
  return { fn, area };
}

/** The k biggest entries as lines: share of `total`, the amount (`unit`: microseconds as milliseconds), name. */
export function topLines(m: Map<string, number>, total: number, k: number, unit = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`): string[] {
  return [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${unit(v)}  ${name}`);
}

export const shortUrl = (url: string) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/(server|bench|lib|app)\//, '$1/');

/**
 * Time by the nearest frame in code of our own or a package (native and `node:` frames charged to it; a sample with
 * none stays under its own name), biggest first; with `inclusive`, every such frame on a sample's stack counts it once.
 */
export function byCaller(p: Profile, o: { inclusive?: boolean } = {}): Array<[string, number]> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Not ours: native, node: builtins, and the bench's own statement counters (bench/turn-cpu.ts).
  const ours = (n: ProfileNode) => !!n.callFrame.url && !n.callFrame.url.startsWith('node:') && !n.callFrame.url.endsWith('bench/turn-cpu.ts');
  const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anon)'} ${shortUrl(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber}` : ''}`;
  const out = new Map<string, number>();
  const add = (k: string, us: number) => out.set(k, (out.get(k) ?? 0) + us);
  p.samples.forEach((id, i) => {
    const us = p.timeDeltas[i] ?? 0;
    let n: ProfileNode | undefined = byId.get(id);
    if (o.inclusive) {
      const seen = new Set<string>();
      for (; n; n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined) if (ours(n)) seen.add(name(n));
      for (const k of seen) add(k, us);
      return;
    }
    const leaf = n!;
    while (n && !ours(n)) n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined;
    add(n ? name(n) : name(leaf), us);
  });
  return [...out.entries()].sort((a, b) => b[1] - a[1]);
}
