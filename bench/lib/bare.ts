// The floor a turn is measured against: a bare node:http server (a process of its own, the same Node) that answers
// the turn's two JSON-RPC requests (`agent`, then `agent.wait`) from memory, with the same token check. No
// routing, no validation, no store, no run: what any HTTP JSON-RPC gateway on this machine cannot go below.
import { spawn } from 'node:child_process';

/** The floor's source (CommonJS, run with `node -e`; it prints its port). */
export const BARE_SERVER = `
const http = require('node:http');
const token = 'Bearer ' + process.env.BARE_TOKEN;
const runs = new Map();
let n = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const send = (code, body) => {
      const s = JSON.stringify(body);
      res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
      res.end(s);
    };
    if (req.headers.authorization !== token) return send(401, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'unauthorized' } });
    let m;
    try { m = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { return send(400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }); }
    let result = {};
    if (m.method === 'agent') {
      const runId = 'run_' + ++n;
      runs.set(runId, 'echo: ' + m.params.message);
      result = { runId, status: 'started' };
    } else if (m.method === 'agent.wait') {
      result = { status: 'ok', response: runs.get(m.params.runId) };
      runs.delete(m.params.runId);
    }
    send(200, { jsonrpc: '2.0', id: m.id, result });
  });
});
server.listen(0, '127.0.0.1', () => console.log(String(server.address().port)));
`;

export async function startBareServer(token: string): Promise<{ baseUrl: string; stop(): void }> {
  const child = spawn(process.execPath, ['-e', BARE_SERVER], { env: { ...process.env, BARE_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bare server exited (${code})`)));
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
  });
  return { baseUrl: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}
