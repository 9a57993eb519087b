// A runtime in its own process (for crash and cluster tests): boots from env, serves the gateway on loopback, prints its URL.
// CROSSTALK_TEST_PG_SCHEMA puts a PostgreSQL store in a schema of its own (tests share one database).
import { loadConfig } from '../config';
import { createRuntime } from '../boot';
import { serve } from './harness';
import { stopOnSignals } from '../shutdown';

const rt = await createRuntime({ config: loadConfig(), pgSchema: process.env.CROSSTALK_TEST_PG_SCHEMA || undefined });
const srv = await serve(rt);
rt.cluster?.setUrl(srv.url);
process.stdout.write(`LISTENING ${srv.url}\n`);
stopOnSignals(rt, srv);
