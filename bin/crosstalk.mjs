#!/usr/bin/env node
// crosstalk CLI: a small client of the gateway's JSON-RPC and event stream (status, approvals, send, tail, delegates).
import '../scripts/require-node.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage: crosstalk <command> [options]

  status                                        the status panel's figures (runs, approvals, reusable delegates, disk)
  approvals list [--session KEY]                pending approvals, oldest first, with their parent chain
  approvals allow ID [--always] [--reason R]    allow one (--always: for the rest of that session)
  approvals deny ID [--reason R]                deny one
  send --session KEY [--detach] MESSAGE...      send a message; waits for the reply unless --detach
  tail --session KEY [--cursor C] [--until-end] follow a session's events live; --cursor replays what came after it
  delegates <list|messages|dismiss|resume> --session KEY [--conversation ID] [--prompt TEXT] [--limit N] [--cursor C]

options: --url URL (default $CROSSTALK_URL or http://127.0.0.1:3000)
         --token T (default $CROSSTALK_TOKEN, else <$CROSSTALK_DATA_DIR or ./data>/token)
         --json    print JSON (tail: one event per line)
         --timeout SECONDS (send: how long to wait for the reply, default 120)

exit codes: 0 ok · 1 the request failed (unreachable, server error) · 2 bad usage · 3 not found or already
            resolved · 4 the run ended in error · 5 timed out`;

const EXIT = { ok: 0, failed: 1, usage: 2, conflict: 3, runError: 4, timeout: 5 };
// CONTRACT §6 codes that mean "that thing is not there (any more)": a script may want to tell them apart.
const CONFLICT_CODES = new Set(['already_resolved', 'unknown_approval', 'unknown_session', 'unknown_conversation', 'unknown_run', 'unknown_agent', 'unknown_channel', 'unknown_delivery', 'not_cancelable']);

function fail(msg, code = EXIT.usage) {
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
      reason: { type: 'string' },
      always: { type: 'boolean' },
      detach: { type: 'boolean' },
      'until-end': { type: 'boolean' },
      timeout: { type: 'string' },
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
const GROUPS = ['status', 'approvals', 'send', 'tail', 'delegates'];
if (o.help || !GROUPS.includes(group)) {
  process.stdout.write(USAGE + '\n');
  process.exit(o.help ? EXIT.ok : EXIT.usage);
}

// Every option checked before any request: a bad one never leaves something done (before, `send --timeout abc` sent
// the message and then refused the option).
const timeoutSeconds = o.timeout !== undefined ? Number(o.timeout) : 120;
if (o.timeout !== undefined && (o.timeout.trim() === '' || !Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)) fail('--timeout must be a positive number of seconds');
const limit = o.limit !== undefined ? Number(o.limit) : undefined;
if (limit !== undefined && (o.limit.trim() === '' || !Number.isInteger(limit) || limit < 1)) fail(`--limit must be a whole number of at least 1, got ${JSON.stringify(o.limit)}`);

// Empty is unset, as for the server (CROSSTALK_TOKEN=, CROSSTALK_DATA_DIR=).
const baseUrl = () => (o.url || process.env.CROSSTALK_URL || 'http://127.0.0.1:3000').replace(/\/$/, '');

function token() {
  if (o.token) return o.token;
  if (process.env.CROSSTALK_TOKEN) return process.env.CROSSTALK_TOKEN;
  const file = path.join(path.resolve(process.env.CROSSTALK_DATA_DIR || './data'), 'token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    fail(`no token: pass --token, set CROSSTALK_TOKEN, or run where ${file} exists`);
  }
}

async function rpc(method, params) {
  const url = `${baseUrl()}/api/gateway`;
  let res;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
  } catch (e) {
    fail(`cannot reach ${url}: ${e.cause?.code ?? e.message}`, EXIT.failed);
  }
  const body = await res.json().catch(() => null);
  if (!body) fail(`${url} answered ${res.status} without JSON`, EXIT.failed);
  if (body.error) {
    const code = body.error.data?.code;
    fail(`${method}: ${body.error.message}${code ? ` (${code})` : ''}${issuesText(body.error.data?.issues)}`, CONFLICT_CODES.has(code) ? EXIT.conflict : code === 'invalid_request' || body.error.code === -32602 ? EXIT.usage : EXIT.failed);
  }
  return body.result;
}

/** The server's list of what was wrong with the params (`error.data.issues`), one line each: path and message. */
const issuesText = (issues) => (Array.isArray(issues) ? issues.map((i) => `\n  ${i.path || '(params)'}: ${i.message}`).join('') : '');

const out = (result, text) => process.stdout.write((o.json ? JSON.stringify(result, null, 2) : text) + '\n');
const formatBytes = (n) => (n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`);
const chainText = (a) => (a.chain ?? [a.sessionKey]).join(' → ');
const trustText = (a) => (a.trust?.kind === 'channel' ? `channel ${a.trust.channel} ${a.trust.peer}` : 'operator');

async function status() {
  const r = await rpc('status', {});
  out(r, [
    `active runs        ${r.activeRuns}`,
    `pending approvals  ${r.pendingApprovals}`,
    `reusable delegates ${r.delegates.reusable} (${formatBytes(r.delegates.bytes)} on disk)`,
    `runs               ok ${r.runs.ok} · error ${r.runs.error} · interrupted ${r.runs.interrupted}`,
    `chose silence      ${r.silence}`,
    `rate limited       ${r.rateLimited}`,
    `webhooks dead      ${r.webhooksDead}`,
    ...(r.processes ? [`processes          ${Array.isArray(r.processes) ? r.processes.length : r.processes}`] : []),
  ].join('\n'));
}

async function approvals() {
  if (command === 'list' || command === undefined) {
    const r = await rpc('approvals.inbox', o.session ? { sessionKey: o.session } : {});
    const lines = r.approvals.map((a) => `${a.approvalId}  ${a.tool}  ${JSON.stringify(a.args)}\n  session ${a.sessionKey}\n  chain   ${chainText(a)}\n  trust   ${trustText(a)} · requested ${a.requestedAt}`);
    out(r, lines.length ? lines.join('\n') : '(no pending approvals)');
    return;
  }
  if (command !== 'allow' && command !== 'deny') fail(`unknown command approvals ${command}\n${USAGE}`);
  const id = rest[0] ?? fail(`approvals ${command} needs an approval id`);
  const decision = command === 'deny' ? 'deny' : o.always ? 'allow_always' : 'allow_once';
  const r = await rpc('approvals.resolve', { approvalId: id, decision, ...(o.reason ? { reason: o.reason } : {}) });
  out({ ...r, approvalId: id, decision }, `${decision} ${id}`);
}

async function send() {
  const sessionKey = o.session ?? fail('--session is required for send');
  // After "send", every positional is the message (or --prompt gives it whole).
  const message = o.prompt ?? [command, ...rest].filter(Boolean).join(' ');
  if (!message) fail('send needs a message');
  const started = await rpc('agent', { sessionKey, message });
  if (o.detach) return out(started, `${started.status} ${started.runId}`);
  const r = await rpc('agent.wait', { runId: started.runId, timeoutMs: Math.round(timeoutSeconds * 1000) });
  out({ runId: started.runId, ...r }, r.status === 'ok' ? (r.response ?? '') : `${r.status}${r.error ? `: ${r.error}` : ''}`);
  if (r.status === 'error') process.exit(EXIT.runError);
  if (r.status === 'timeout') process.exit(EXIT.timeout);
}

function eventLine(cursor, ev) {
  const d = ev.data ?? {};
  const what =
    ev.stream === 'assistant' ? JSON.stringify(d.delta ?? '') :
    ev.stream === 'tool' ? `${d.phase} ${d.name} ${JSON.stringify(d.phase === 'end' ? d.result : d.args)}` :
    ev.stream === 'message' ? `${d.message?.role}/${d.message?.kind}: ${d.message?.content || d.message?.tool?.name || ''}` :
    ev.stream === 'approval' ? `${d.phase} ${d.approvalId}${d.tool ? ` ${d.tool}` : ''}${d.decision ? ` ${d.decision}` : ''}` :
    [d.phase, d.status, d.error].filter(Boolean).join(' ');
  return `${cursor}  ${ev.ts}  ${ev.runId}  ${ev.stream}  ${what}`;
}

async function tail() {
  const sessionKey = o.session ?? fail('--session is required for tail');
  // An agent that does not exist has no events to follow: exit 3 as `send` to it does (the event stream takes any
  // well-formed key, so it would follow forever). A session not there yet is followed: its first message may come.
  const agentId = /^agent:([^:]+):/.exec(sessionKey)?.[1];
  if (agentId) {
    const { agents } = await rpc('agents.list', {});
    if (!agents.some((a) => a.agentId === agentId)) fail(`tail: unknown agent ${agentId} (unknown_agent)`, EXIT.conflict);
  }
  const url = `${baseUrl()}/api/gateway/events?sessionKey=${encodeURIComponent(sessionKey)}`;
  let res;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token()}`, accept: 'text/event-stream', ...(o.cursor ? { 'last-event-id': o.cursor } : {}) } });
  } catch (e) {
    fail(`cannot reach ${url}: ${e.cause?.code ?? e.message}`, EXIT.failed);
  }
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    const code = body?.error?.data?.code;
    fail(`tail: ${body?.error?.message ?? res.status}${code ? ` (${code})` : ''}`, code === 'invalid_cursor' || res.status === 400 ? EXIT.usage : EXIT.failed);
  }
  // On stderr, so stdout stays the events alone: the stream is subscribed from here on.
  process.stderr.write(`following ${sessionKey}${o.cursor ? ` after cursor ${o.cursor}` : ''}\n`);
  process.on('SIGINT', () => process.exit(EXIT.ok));
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, at);
      buf = buf.slice(at + 2);
      let id = '';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      const ev = JSON.parse(data.join('\n'));
      process.stdout.write((o.json ? JSON.stringify({ cursor: id, event: ev }) : eventLine(id, ev)) + '\n');
      if (o['until-end'] && ev.stream === 'lifecycle' && (ev.data?.phase === 'end' || ev.data?.phase === 'error')) {
        process.exit(ev.data.phase === 'end' ? EXIT.ok : EXIT.runError);
      }
    }
  }
  fail('the event stream closed', EXIT.failed);
}

async function delegates() {
  const need = (name, value) => value ?? fail(`--${name} is required for delegates ${command}`);
  if (!command) fail(`delegates needs a command\n${USAGE}`);
  const session = need('session', o.session);
  switch (command) {
    case 'list': {
      const r = await rpc('delegates.list', { sessionKey: session, ...(limit !== undefined ? { limit } : {}), ...(o.cursor ? { cursor: o.cursor } : {}) });
      const lines = r.sessions.map((s) => `${s.conversation_id}  ${s.agent_id}  ${s.mode}  ${s.status}  turns=${s.turns}  bytes=${s.bytes}  ${s.last_interacted_at}`);
      out(r, [...(lines.length ? lines : ['(no delegates)']), ...(r.next_cursor ? [`next: --cursor ${r.next_cursor}`] : [])].join('\n'));
      break;
    }
    case 'messages': {
      const r = await rpc('delegates.messages', { sessionKey: session, conversation_id: need('conversation', o.conversation), ...(limit !== undefined ? { limit } : {}), ...(o.cursor ? { cursor: o.cursor } : {}) });
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
      if (r.status !== 'ok') fail(`delegate ${r.status}: ${r.error?.message ?? ''}`, EXIT.runError);
      out(r, r.response);
      break;
    }
    default:
      fail(`unknown command delegates ${command}\n${USAGE}`);
  }
}

await { status, approvals, send, tail, delegates }[group]();
