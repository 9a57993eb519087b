import { it } from 'vitest';
import { readSse, startTestServer } from './testing/harness';
it('dbg', async () => {
  const s = await startTestServer({ config: { agents: [{ id: 'main', tools: { exec: 'auto' } }] } });
  const key = 'agent:main:sse-live';
  const reading = readSse(`${s.url}/api/gateway/events?sessionKey=${key}`, { until: (evs) => evs.some((e) => e.stream === 'lifecycle' && e.data.phase === 'end') });
  await new Promise((r) => setTimeout(r, 50));
  const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/reply one two three four\n/tool exec {"command":"echo x"}' });
  const evs = await reading;
  console.log(evs.map((e) => `${e.seq} ${e.stream} ${e.data.phase ?? ''} ${e._sseId}`).join('\n'));
  await new Promise((r) => setTimeout(r, 300));
  const rows = await s.rt.store.db.selectFrom('events').select(['id', 'seq', 'stream', 'tx' as any]).where('run_id', '=', runId).orderBy('id').execute();
  console.log(rows.map((r: any) => `${r.seq} ${r.stream} ${r.id} ${r.tx}`).join('\n'));
  await s.close();
}, 30000);
