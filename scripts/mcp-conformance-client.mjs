#!/usr/bin/env node
// The client under test for the official MCP conformance suite (`conformance client --command …`): crosstalk's own MCP
// client (server/mcp) in a real runtime on a fresh data dir. It connects to the scenario's server (the suite appends its
// URL as the last argument and names the scenario in MCP_CONFORMANCE_SCENARIO), lists its tools, and calls each one
// through the real run loop and tool policy (MCP tools are `ask`); no person is there, so this script answers each
// approval (allow_once) and each elicitation (accept with the schema's defaults, SEP-1034), as a person would. An
// `authorization` item (a server behind OAuth, the `auth/*` scenarios) is completed with no person: the harness follows
// the authorization URL itself and hands the redirect's code and state to crosstalk's callback (rt.mcp.oauthCallback,
// what GET /api/mcp/oauth/callback calls).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// TypeScript through tsx, unless this is the test run's bundle of this script (server/testing/child-bundle.ts).
if (process.env.CROSSTALK_BUNDLED !== '1') (await import('tsx/esm/api')).register();
const { parseRawConfig, resolveConfig } = await import('../server/config.ts');
const { createRuntime } = await import('../server/boot.ts');
const { elicitDefaults, checkElicitContent } = await import('../server/mcp/elicit-content.ts');

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '(none)';
if (!url || !/^https?:\/\//.test(url)) {
  console.error('usage: mcp-conformance-client.mjs <server url>');
  process.exit(2);
}
const say = (line) => process.stderr.write(`[crosstalk ${scenario}] ${line}\n`);

// Pre-registered client credentials (auth/pre-registration) come in the suite's context; a client-ID metadata document
// URL is offered for the authorization servers that take one (auth/basic-cimd).
const context = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {};
const oauth = {
  clientMetadataUrl: 'https://conformance-test.local/client-metadata.json',
  ...(context.client_id ? { clientId: context.client_id } : {}),
  ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
};
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crosstalk-conformance-'));
const config = resolveConfig(parseRawConfig({ agents: [{ id: 'main' }], mcp: { servers: { conformance: { url, oauth } } } }), {
  CROSSTALK_DATA_DIR: dataDir,
  CROSSTALK_WORKSPACES: `${dataDir}-ws`,
  CROSSTALK_TOKEN: 'conformance',
});
const rt = await createRuntime({ config });
const key = 'agent:main:main';

/** Arguments for a call: each property's default, else a plain value of its type. */
function argsFor(schema) {
  const out = {};
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    if (p.default !== undefined) out[name] = p.default;
    else if (p.enum?.length) out[name] = p.enum[0];
    else if (p.type === 'number' || p.type === 'integer') out[name] = 1;
    else if (p.type === 'boolean') out[name] = true;
    else if (p.type === 'array') out[name] = [];
    else if (p.type === 'object') out[name] = {};
    else out[name] = 'test';
  }
  return out;
}

/** A person's browser, for an `authorization` item: opens the URL; the authorization server sends it back with a code. */
async function authorize(a) {
  const res = await fetch(a.url, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (!location) throw new Error(`the authorization URL answered ${res.status} with no redirect`);
  const back = new URL(location, a.url).searchParams;
  const out = await rt.mcp.oauthCallback({ state: back.get('state'), code: back.get('code'), error: back.get('error'), errorDescription: back.get('error_description') });
  say(`authorization ${a.approvalId}: ${out.ok ? 'completed' : `failed: ${out.message}`}`);
}

/** Answers what is pending, as a person at the room would. */
let answering = true;
const answerer = (async () => {
  while (answering) {
    for (const a of (await rt.gateway.approvalsList({ sessionKey: key })).approvals) {
      try {
        if (a.kind === 'tool') await rt.gateway.approvalsResolve({ approvalId: a.approvalId, decision: 'allow_once' });
        else if (a.kind === 'authorization') await authorize(a);
        else if (a.kind === 'elicitation' && a.mode === 'form') {
          const content = elicitDefaults(a.requestedSchema);
          const fits = checkElicitContent(a.requestedSchema, content).ok;
          say(`elicitation "${a.message}": ${fits ? 'accept with the defaults' : 'decline (required fields have no default)'}`);
          await rt.gateway.approvalsResolve({ approvalId: a.approvalId, decision: fits ? 'accept' : 'decline', ...(fits ? { content } : {}) });
        } else await rt.gateway.approvalsResolve({ approvalId: a.approvalId, decision: a.kind === 'budget' ? 'deny' : 'decline' });
      } catch (e) {
        say(`could not answer ${a.approvalId}: ${e.message}`);
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
})();

let failed = false;
try {
  await rt.mcp.ready(20_000);
  // A server behind OAuth is down until its authorization item is answered (above): wait for it to come up.
  for (let end = Date.now() + 20_000; rt.mcp.status()[0].state !== 'ready' && /needs authorization/.test(rt.mcp.status()[0].error ?? '') && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 25));
  const st = rt.mcp.status()[0];
  say(`server ${st.state}${st.error ? `: ${st.error}` : ''}, ${st.tools} tool(s)`);
  if (st.state !== 'ready') failed = true;
  const tools = [...rt.tools.values()].filter((t) => t.source?.kind === 'mcp');
  for (const t of tools) {
    const args = argsFor(t.jsonSchema);
    const { runId } = await rt.gateway.agent({ sessionKey: key, message: `/tool ${t.name} ${JSON.stringify(args)}` });
    const done = await rt.gateway.agentWait({ runId, timeoutMs: 25_000 });
    say(`${t.name} ${JSON.stringify(args)} → ${done.status}: ${String(done.response ?? done.error ?? '').slice(0, 500)}`);
    if (done.status !== 'ok' || /"status":"error"/.test(String(done.response ?? ''))) failed = true;
  }
} catch (e) {
  say(`failed: ${e.stack ?? e}`);
  failed = true;
} finally {
  answering = false;
  await answerer.catch(() => undefined);
  await rt.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(`${dataDir}-ws`, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
