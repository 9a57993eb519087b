// A runtime in its own process (for crash and cluster tests): boots from env, serves the gateway on loopback, prints its URL.
// CROSSTALK_TEST_PG_SCHEMA puts a PostgreSQL store in a schema of its own (tests share one database).
// Its secrets arrive on the fd CROSSTALK_SECRETS_FD names when startChildServer starts it (scripts/secrets.mjs).
import { receiveSecrets } from '../../scripts/secrets.mjs';

receiveSecrets();
const { loadConfig } = await import('../config');
const { createRuntime } = await import('../boot');
const { serve } = await import('./harness');
const { stopOnSignals } = await import('../shutdown');

const rt = await createRuntime({ config: loadConfig(), pgSchema: process.env.CROSSTALK_TEST_PG_SCHEMA || undefined });
const srv = await serve(rt);
rt.cluster?.setUrl(srv.url);
process.stdout.write(`LISTENING ${srv.url}\n`);
stopOnSignals(rt, srv);
