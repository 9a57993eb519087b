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
    // A 100 ms busy loop (a gap) once the loop runs (run by the script's first line, before the loop starts, the probe's
    // first sample measured it from a stale loop time: 43 ms of 60 in a CI run); then a heap with something in it;
    // 250 ms later (windows of their own: a scavenge while it is allocated, stretched on a loaded machine, would outlast
    // a major collection in the same window and be the one kept) major collections; then time for the windows after
    // them: 350 ms counted from the collections' end (under load they end late, and a window written before the
    // observer saw them would carry no pause).
    const script = `
      setTimeout(() => {
        const end = Date.now() + 100; while (Date.now() < end);
        setTimeout(() => {
          globalThis.k = Array.from({ length: 2e5 }, (_, i) => ({ i }));
          setTimeout(() => { for (let i = 0; i < 3; i++) gc(); setTimeout(() => {}, 350); }, 250);
        }, 150);
      }, 20);`;
    execFileSync(process.execPath, ['--expose-gc', `--import=${path.join(__dirname, 'loop-probe.mjs')}`, '-e', script], { env: { ...process.env, CROSSTALK_LOOP_PROBE: probe }, timeout: 20_000 });
    const ws = loopWindows(probe);
    fs.rmSync(dir, { recursive: true, force: true });
    expect(Math.max(...ws.map((w) => w.max)), JSON.stringify(ws)).toBeGreaterThanOrEqual(60);
    // gc() is a full collection: some window's longest pause is a major one (kind 4).
    expect(ws.some((w) => (w.gc ?? 0) > 0 && (w as { gcKind?: number }).gcKind === 4), JSON.stringify(ws)).toBe(true);
  });

  it('traces each gap past CROSSTALK_GAP_TRACE ms as a span of the monotonic clock that holds it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-probe-'));
    const probe = path.join(dir, 'probe');
    // After a moment of idle, an 80 ms busy loop; its span on CLOCK_MONOTONIC (µs) printed around it.
    const script = `
      setTimeout(() => {
        const from = Number(process.hrtime.bigint() / 1000n);
        const end = Date.now() + 80; while (Date.now() < end);
        console.log(JSON.stringify({ from, to: Number(process.hrtime.bigint() / 1000n) }));
        setTimeout(() => {}, 100);
      }, 100);`;
    const busy = JSON.parse(execFileSync(process.execPath, [`--import=${path.join(__dirname, 'loop-probe.mjs')}`, '-e', script], { env: { ...process.env, CROSSTALK_LOOP_PROBE: probe, CROSSTALK_GAP_TRACE: '30' }, timeout: 20_000 }).toString()) as { from: number; to: number };
    const file = fs.readdirSync(dir).find((f) => f.startsWith('probe-gaps.'));
    const gaps = file ? fs.readFileSync(path.join(dir, file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { from: number; to: number }) : [];
    fs.rmSync(dir, { recursive: true, force: true });
    // One gap holds the busy loop; the probe's own windows file is not mistaken for it.
    expect(gaps.some((g) => g.from <= busy.from && g.to >= busy.to && g.to - g.from >= 80_000)).toBe(true);
    expect(gaps.every((g) => g.to - g.from >= 30_000)).toBe(true);
  });
});

