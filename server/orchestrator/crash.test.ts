// A hard kill (SIGKILL) between the target's end and the callback turn: after a restart the callback arrives exactly once.
import { describe, expect, it } from 'vitest';
import { startChildServer, tmpDataDir, until } from '../testing/harness';


describe('callbacks across a hard kill', () => {
  it('is delivered exactly once after the server is killed right after recording it', async () => {
    const dataDir = tmpDataDir();
    const a = await startChildServer({ dataDir, env: { CROSSTALK_FAILPOINTS: 'callback.recorded' } });
    await a.rpc('agent', { sessionKey: 'agent:main:main', message: '/tool sessions_send {"sessionKey":"agent:researcher:main","message":"/reply 42","mode":"async"}' });
    // The researcher's run ends, records the callback, and the process dies on the spot (SIGKILL).
    expect(await a.exited).toBe(137);

    const b = await startChildServer({ dataDir });
    try {
      const history = async () => (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:main:main', limit: 50 })).messages.reverse();
      const h = await until(async () => {
        const x = await history();
        return x.some((m) => m.content === 'echo: 42') ? x : null;
      });
      await new Promise((r) => setTimeout(r, 300)); // would a duplicate show up?
      const again = await history();
      expect(again.filter((m) => m.kind === 'agent_callback_result').map((m) => m.content)).toEqual(['42']);
      expect(again.filter((m) => m.content === 'echo: 42').length).toBe(1);
      expect(again.length).toBe(h.length);
      const target = (await b.rpc<{ messages: any[] }>('chat.history', { sessionKey: 'agent:researcher:main' })).messages;
      expect(target.map((m) => m.content)).toEqual(['42', '/reply 42']);
    } finally {
      b.kill();
      await b.exited;
    }
  }, 30_000);
});
