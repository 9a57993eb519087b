// The load the room benches run under: runs streaming at once, each a few seconds of "thinking" then a streamed
// reply, back to back, so that many are in flight at any moment (not a flood).
import type { RpcClient } from './http';
import { sleep } from './stats';

/**
 * `streams` loops, loop i running turns on `agent:main:live-<i>` (`/sleep 3000–4000` then `/reply <words>`) until
 * stopped; a failed call waits 100 ms and tries again. `stop()` waits for the runs in flight and gives the number
 * that finished.
 */
export function streamLoad(rpc: RpcClient, streams: number, words: string): { stop(): Promise<number> } {
  let running = true;
  let runs = 0;
  const loops = Array.from({ length: streams }, async (_, i) => {
    while (running) {
      try {
        const { runId } = await rpc.call<{ runId: string }>('agent', { sessionKey: `agent:main:live-${i}`, message: `/sleep ${3000 + (i % 5) * 250}\n/reply ${words}` });
        await rpc.call('agent.wait', { runId, timeoutMs: 30_000 });
        runs++;
      } catch {
        await sleep(100);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return runs;
    },
  };
}
