// Event-loop probe for bench:scale, loaded into the server with `node --import`: every 100 ms it appends
// `{t, max, p99, gc, gcKind}` (wall clock ms; the loop's longest delay in that window, ms, from
// perf_hooks.monitorEventLoopDelay; the window's longest GC pause, ms, and its kind: 1 minor, 4 major, 8 incremental)
// to $CROSSTALK_LOOP_PROBE.<pid>, so the bench can take the max gap over each of its phases, and how much V8 made.
// With CROSSTALK_GAP_TRACE=<ms> it also appends each stretch longer than that in which a 1 ms timer could not run,
// `{from, to}` in CLOCK_MONOTONIC µs (the clock of V8's CPU profiles), to $CROSSTALK_LOOP_PROBE-gaps.<pid>: a CPU
// profile's samples between the two name what held the loop (bench/lib/long-tasks.ts `framesIn`).
import fs from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

// The gateway's loop only: a worker thread (the room's pages, scripts/pages.mjs) inherits `--import` and has a loop of
// its own, whose gaps hold no run or request of the gateway's.
const file = isMainThread ? process.env.CROSSTALK_LOOP_PROBE : undefined;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const out = `${file}.${process.pid}`;
  // The window's longest garbage-collection pause and its kind (perf_hooks 'gc' entries), to tell a gap V8 made.
  let gc = 0;
  let gcKind = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.duration > gc) (gc = e.duration), (gcKind = e.detail?.kind ?? 0);
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => {
    const line = JSON.stringify({ t: Date.now(), max: h.max / 1e6, p99: h.percentile(99) / 1e6, gc, gcKind });
    h.reset();
    gc = 0;
    gcKind = 0;
    fs.appendFile(out, `${line}\n`, () => {});
  }, 100).unref();
}
if (file && Number(process.env.CROSSTALK_GAP_TRACE) > 0) {
  const minUs = Number(process.env.CROSSTALK_GAP_TRACE) * 1000;
  const out = `${file}-gaps.${process.pid}`;
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  let last = nowUs();
  setInterval(() => {
    const now = nowUs();
    if (now - last >= minUs) fs.appendFile(out, `${JSON.stringify({ from: last, to: now })}\n`, () => {});
    last = now;
  }, 1).unref();
}
