// A runtime in its own process (for crash tests): boots from env, serves the gateway on loopback, prints its URL.
import { loadConfig } from '../config';
import { createRuntime } from '../boot';
import { serve } from './harness';

const rt = await createRuntime({ config: loadConfig() });
const srv = await serve(rt);
process.stdout.write(`LISTENING ${srv.url}\n`);
