// The headless gateway (`npm run worker`): the same server/ as `npm start`, JSON-RPC + SSE + metrics, no web room.
import '../scripts/require-node.mjs';
import { launchWithoutSecrets } from '../scripts/secrets.mjs';

// Secrets in the environment: this process becomes the launcher and never gets past this line (scripts/secrets.mjs).
await launchWithoutSecrets();
const { bootRuntime } = await import('./boot');
const { serve } = await import('./http/node-server');
const { stopOnSignals } = await import('./shutdown');

const rt = await bootRuntime();
const srv = await serve(rt, { host: rt.config.host, port: rt.config.port });
rt.log.info({ url: srv.url }, 'crosstalk worker listening');
stopOnSignals(rt, srv);
