// Allocation sampler for the benches, loaded into the server with `node --import`: with CROSSTALK_HEAP_SAMPLE=<file>
// a first SIGUSR2 starts V8's sampling heap profiler on the gateway's thread (one sample per 32 KB allocated on
// average, the samples of objects collected since kept: what was allocated, not what is live), a second one stops it
// and writes the profile (a .heapprofile, as Chrome's DevTools reads it) to <file>. What a load allocates, by
// function: what fills the young generation and gets promoted into the old one.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { isMainThread } from 'node:worker_threads';

const file = isMainThread ? process.env.CROSSTALK_HEAP_SAMPLE : undefined;
if (file) {
  const s = new Session();
  s.connect();
  let on = false;
  process.on('SIGUSR2', async () => {
    on = !on;
    if (on) {
      await s.post('HeapProfiler.enable');
      await s.post('HeapProfiler.startSampling', { samplingInterval: 32768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    } else {
      const { profile } = await s.post('HeapProfiler.stopSampling');
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(profile));
      fs.renameSync(`${file}.tmp`, file);
    }
  });
}
