// Event-loop probe for bench:scale, loaded into the server with `node --import`: every 100 ms it appends
// `{t, max, p99}` (wall clock ms; the loop's longest delay in that window, ms, from perf_hooks.monitorEventLoopDelay)
// to $CROSSTALK_LOOP_PROBE.<pid>, so the bench can take the max gap over each of its phases.
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.CROSSTALK_LOOP_PROBE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const out = `${file}.${process.pid}`;
  setInterval(() => {
    const line = JSON.stringify({ t: Date.now(), max: h.max / 1e6, p99: h.percentile(99) / 1e6 });
    h.reset();
    fs.appendFile(out, `${line}\n`, () => {});
  }, 100).unref();
}
