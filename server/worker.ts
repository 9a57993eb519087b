// The headless gateway (`npm run worker`): the same server/ as `npm start`, JSON-RPC + SSE + metrics, no web room.
import '../scripts/require-node.mjs';
import { bootRuntime } from './boot';
import { serve } from './http/node-server';
import { stopOnSignals } from './shutdown';

const rt = await bootRuntime();
const srv = await serve(rt, { host: rt.config.host, port: rt.config.port });
rt.log.info({ url: srv.url }, 'crosstalk worker listening');
stopOnSignals(rt, srv);
