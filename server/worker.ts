// The headless gateway (`npm run worker`): the same server/ as `npm start`, JSON-RPC + SSE + metrics, no web room.
import '../scripts/require-node.mjs';
import { launchWithoutSecrets } from '../scripts/secrets.mjs';

// Secrets in the environment: this process becomes the launcher and never gets past this line (scripts/secrets.mjs).
await launchWithoutSecrets();
const { ConfigError, loadConfig } = await import('./config');
const { bootRuntime } = await import('./boot');
const { ListenError, serve } = await import('./http/node-server');
const { stopOnSignals } = await import('./shutdown');

// The configuration first (PORT and every other setting checked: a bad one stops the start with one line), then the
// port, then the runtime. Listening before the runtime boots means a port in use (another worker there) stops this one
// before it joins the cluster, takes sessions over or recovers runs: before, it did all that, then died at listen,
// and the runs it had taken stalled until the others declared it dead (PostgreSQL) or the next start (SQLite).
// Requests that arrive while it boots wait for it.
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(`crosstalk: ${e.message}`);
  process.exit(1);
}
let booted!: (rt: Awaited<ReturnType<typeof bootRuntime>>) => void;
const runtime = new Promise<Awaited<ReturnType<typeof bootRuntime>>>((r) => (booted = r));
const srv = await serve(runtime, { host: config.host, port: config.port }).catch((e: unknown) => {
  if (!(e instanceof ListenError)) throw e;
  console.error(`crosstalk: ${e.message}`);
  process.exit(1);
});
const rt = await bootRuntime(config); // the configuration read above, not read again
booted(rt);
rt.log.info({ url: srv.url }, 'crosstalk worker listening');
stopOnSignals(rt, srv);
