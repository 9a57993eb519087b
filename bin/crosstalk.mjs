#!/usr/bin/env node
// crosstalk CLI: a small client of the gateway's JSON-RPC (delegates list | messages | dismiss | resume).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage: crosstalk delegates <list|messages|dismiss|resume> --session <parentSessionKey> [options]

  list      [--limit N] [--cursor C]            delegate sessions of the parent, newest interaction first
  messages  --conversation ID [--limit N] [--cursor C]   a delegate's messages, newest first
  dismiss   --conversation ID                   remove a delegate from the reusable pool
  resume    --conversation ID --prompt TEXT     send a follow-up through the parent and print the reply

options: --url URL (default $CROSSTALK_URL or http://127.0.0.1:3000)
         --token T (default $CROSSTALK_TOKEN, else <$CROSSTALK_DATA_DIR or ./data>/token)
         --json    print the raw JSON result`;

function fail(msg, code = 2) {
  process.stderr.write(`crosstalk: ${msg}\n`);
  process.exit(code);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      session: { type: 'string', short: 's' },
      conversation: { type: 'string', short: 'c' },
      prompt: { type: 'string', short: 'p' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (e) {
  fail(`${e.message}\n${USAGE}`);
}
const { values: o, positionals } = parsed;
const [group, command, ...rest] = positionals;
if (o.help || group !== 'delegates' || !command) {
  process.stdout.write(USAGE + '\n');
  process.exit(o.help ? 0 : 2);
}

function token() {
  if (o.token) return o.token;
  if (process.env.CROSSTALK_TOKEN) return process.env.CROSSTALK_TOKEN;
  const file = path.join(path.resolve(process.env.CROSSTALK_DATA_DIR ?? './data'), 'token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    fail(`no token: pass --token, set CROSSTALK_TOKEN, or run where ${file} exists`);
  }
}

async function rpc(method, params) {
  const url = `${(o.url ?? process.env.CROSSTALK_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '')}/api/gateway`;
  let res;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
  } catch (e) {
    fail(`cannot reach ${url}: ${e.cause?.code ?? e.message}`, 1);
  }
  const body = await res.json().catch(() => null);
  if (!body) fail(`${url} answered ${res.status} without JSON`, 1);
  if (body.error) fail(`${method}: ${body.error.message}${body.error.data?.code ? ` (${body.error.data.code})` : ''}`, 1);
  return body.result;
}

const need = (name, value) => value ?? fail(`--${name} is required for delegates ${command}`);
const limit = o.limit !== undefined ? Number(o.limit) : undefined;
if (limit !== undefined && !Number.isInteger(limit)) fail('--limit must be an integer');
const session = need('session', o.session);
const out = (result, text) => process.stdout.write((o.json ? JSON.stringify(result, null, 2) : text) + '\n');

switch (command) {
  case 'list': {
    const r = await rpc('delegates.list', { sessionKey: session, ...(limit ? { limit } : {}), ...(o.cursor ? { cursor: o.cursor } : {}) });
    const lines = r.sessions.map((s) => `${s.conversation_id}  ${s.agent_id}  ${s.mode}  ${s.status}  turns=${s.turns}  bytes=${s.bytes}  ${s.last_interacted_at}`);
    out(r, [...(lines.length ? lines : ['(no delegates)']), ...(r.next_cursor ? [`next: --cursor ${r.next_cursor}`] : [])].join('\n'));
    break;
  }
  case 'messages': {
    const r = await rpc('delegates.messages', { sessionKey: session, conversation_id: need('conversation', o.conversation), ...(limit ? { limit } : {}), ...(o.cursor ? { cursor: o.cursor } : {}) });
    const lines = r.messages.map((m) => `[${m.createdAt}] ${m.role}/${m.kind}: ${m.content || (m.tool ? `${m.tool.name} ${JSON.stringify(m.tool.result ?? m.tool.args)}` : '')}`);
    out(r, [...(lines.length ? lines : ['(no messages)']), ...(r.next_cursor ? [`next: --cursor ${r.next_cursor}`] : [])].join('\n'));
    break;
  }
  case 'dismiss': {
    const r = await rpc('delegates.dismiss', { sessionKey: session, conversation_id: need('conversation', o.conversation) });
    out(r, `dismissed ${o.conversation}`);
    break;
  }
  case 'resume': {
    const prompt = o.prompt ?? (rest.length ? rest.join(' ') : undefined);
    const r = await rpc('delegates.resume', { sessionKey: session, conversation_id: need('conversation', o.conversation), prompt: need('prompt', prompt) });
    if (r.status !== 'ok') fail(`delegate ${r.status}: ${r.error?.message ?? ''}`, 1);
    out(r, r.response);
    break;
  }
  default:
    fail(`unknown command delegates ${command}\n${USAGE}`);
}
