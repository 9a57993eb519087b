// The event-loop probe (loop-probe.mjs) loaded into a real Node process: its windows carry the loop's longest gap and
// the longest garbage-collection pause, so bench:scale can say how much of a phase's gap V8 made.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loopWindows } from './loop-windows';

describe('loop-probe.mjs', () => {
  it('records each window’s longest gap and its longest GC pause with the kind', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-probe-'));
    const probe = path.join(dir, 'probe');
    // A 60 ms busy loop (a gap), then major collections of a heap with something in it, then time for a last window.
    const script = `
      const end = Date.now() + 60; while (Date.now() < end);
      setTimeout(() => { const keep = Array.from({ length: 2e5 }, (_, i) => ({ i })); for (let i = 0; i < 3; i++) gc(); globalThis.k = keep; }, 150);
      setTimeout(() => {}, 450);`;
    execFileSync(process.execPath, ['--expose-gc', `--import=${path.join(__dirname, 'loop-probe.mjs')}`, '-e', script], { env: { ...process.env, CROSSTALK_LOOP_PROBE: probe }, timeout: 20_000 });
    const ws = loopWindows(probe);
    fs.rmSync(dir, { recursive: true, force: true });
    expect(Math.max(...ws.map((w) => w.max))).toBeGreaterThanOrEqual(50);
    // gc() is a full collection: some window's longest pause is a major one (kind 4).
    expect(ws.some((w) => (w.gc ?? 0) > 0 && (w as { gcKind?: number }).gcKind === 4)).toBe(true);
  });
});
