// Config loading: defaults, the tool policy rule, and a bad file stopping the start with the bad key named.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, toolPolicyFor } from './config';
import { tmpDataDir } from './testing/harness';

const withFile = (content: string) => {
  const f = path.join(tmpDataDir(), 'crosstalk.config.json');
  fs.writeFileSync(f, content);
  return { CROSSTALK_CONFIG: f, CROSSTALK_DATA_DIR: path.dirname(f) };
};

describe('config', () => {
  it('has three scripted default agents, main first', () => {
    const c = loadConfig({ CROSSTALK_CONFIG: undefined, CROSSTALK_DATA_DIR: tmpDataDir() });
    expect(c.agents.map((a) => [a.id, a.persona, a.models])).toEqual([
      ['main', 'Main', ['scripted']],
      ['researcher', 'Researcher', ['scripted']],
      ['writer', 'Writer', ['scripted']],
    ]);
    expect(c.defaultAgentId).toBe('main');
    expect(toolPolicyFor(c.agents[0]!, 'exec')).toBe('ask');
    expect(toolPolicyFor(c.agents[0]!, 'sessions_send')).toBe('auto');
  });

  it('names the bad key of a file that does not validate', () => {
    expect(() => loadConfig(withFile('{"agents": [{"id": "Main Agent"}]}'))).toThrow(/bad key "agents\.0\.id"/);
    expect(() => loadConfig(withFile('{"sesion": {}}'))).toThrow(/unknown key sesion/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "tools": {"exec": "sometimes"}}]}'))).toThrow(/agents\.0\.tools\.exec/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "model": ["scripted", "madeup:x"]}]}'))).toThrow(/bad key "agents\.0\.model"/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "model": "compatible:llama"}]}'))).toThrow(/CROSSTALK_COMPAT_BASE_URL/);
    expect(() => loadConfig(withFile('{ not json'))).toThrow(ConfigError);
    // JSON that is not an object is no config: it started on the defaults (null, 5, []) or named key "0".
    for (const text of ['null', '5', '[]', '"s"', '[{"agents": []}]']) expect(() => loadConfig(withFile(text))).toThrow(/must be a JSON object/);
  });

  it('"*" in an agent\'s tools is the policy of every tool it does not name (exec and MCP tools too); exec.env never names the server\'s own secrets', () => {
    const c = loadConfig(withFile('{"agents": [{"id": "denier", "tools": {"sessions_list": "auto", "mcp__files__*": "ask", "*": "deny"}}, {"id": "open", "tools": {"*": "auto"}}]}'));
    const [denier, open] = c.agents;
    // Before: "*" was read by nothing, so these were auto (and exec, MCP ask) for an agent configured to deny everything.
    expect(['send_message', 'sessions_send', 'exec', 'mcp__other__x'].map((t) => toolPolicyFor(denier!, t))).toEqual(['deny', 'deny', 'deny', 'deny']);
    expect([toolPolicyFor(denier!, 'sessions_list'), toolPolicyFor(denier!, 'mcp__files__read')]).toEqual(['auto', 'ask']);
    expect(toolPolicyFor(open!, 'exec')).toBe('auto');
    for (const name of ['CROSSTALK_TOKEN', 'DATABASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) {
      // Before: accepted, and exec's environment held the gateway's token (or the store's URL, a model key).
      expect(() => loadConfig(withFile(`{"agents": [{"id": "a", "exec": {"env": ["PATH_EXTRA", "${name}"]}}]}`)), name).toThrow(/agents\.0\.exec\.env\.1.*server's own secrets/);
    }
    expect(loadConfig(withFile('{"agents": [{"id": "a", "exec": {"env": ["GITHUB_TOKEN"]}}]}')).agents[0]!.execEnv).toEqual(['GITHUB_TOKEN']);
  });

  it('refuses keys that name nothing: an unknown channel, a models key that is no model spec, an agent\'s MCP server that is not configured', () => {
    // Before: each started with no word, and did nothing.
    expect(() => loadConfig(withFile('{"channels": {"myspace": {"x": 1}}}'))).toThrow(/bad key "channels\.myspace": no such channel/);
    expect(() => loadConfig(withFile('{"models": {"gpt4": {"contextWindow": 1000}}}'))).toThrow(/bad key "models\.gpt4"/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "main", "mcp": ["ghost"]}]}'))).toThrow(/bad key "agents\.0\.mcp\.0": no MCP server "ghost"/);
    const ok = loadConfig(withFile('{"channels": {"telegram": {"botToken": "t"}}, "models": {"openai:gpt-4o-mini": {"contextWindow": 128000}}, "agents": [{"id": "main", "mcp": ["files"]}], "mcp": {"servers": {"files": {"command": "node"}}}}'));
    expect(Object.keys(ok.channels)).toEqual(['telegram']);
  });

  it('reads agents[].reviewer (escalateAfterDenials defaults to 2) and names a bad reviewer key', () => {
    const c = loadConfig(withFile('{"agents": [{"id": "a", "reviewer": {"model": "scripted"}}, {"id": "b", "reviewer": {"model": "openai:gpt-4o-mini", "escalateAfterDenials": 0, "instructions": "Be strict."}}, {"id": "c"}]}'));
    expect(c.agents.map((a) => a.reviewer)).toEqual([
      { model: 'scripted', escalateAfterDenials: 2 },
      { model: 'openai:gpt-4o-mini', escalateAfterDenials: 0, instructions: 'Be strict.' },
      undefined,
    ]);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "reviewer": {}}]}'))).toThrow(/bad key "agents\.0\.reviewer\.model": the reviewer's model spec/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "reviewer": {"model": "madeup:x"}}]}'))).toThrow(/bad key "agents\.0\.reviewer\.model": unknown model provider "madeup"/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "reviewer": {"model": "scripted", "escalateAfterDenials": -1}}]}'))).toThrow(/bad key "agents\.0\.reviewer\.escalateAfterDenials": a whole number of denials/);
    expect(() => loadConfig(withFile('{"agents": [{"id": "a", "reviewer": {"model": "scripted", "escalateAfter": 3}}]}'))).toThrow(/unknown key escalateAfter/);
  });

  it('takes per-agent limits over the global ones', () => {
    const c = loadConfig(withFile('{"limits": {"sendMessagePerRun": 2}, "agents": [{"id": "a"}, {"id": "b", "limits": {"sendMessagePerRun": 7}}]}'));
    expect(c.agents.map((a) => a.limits.sendMessagePerRun)).toEqual([2, 7]);
    expect(c.agents[0]!.limits.maxDelegateDepth).toBe(3);
  });

  it('refuses a workspace inside the data dir (or holding it) even through a symlink; DATABASE_URL must be postgres://', () => {
    const env = withFile('{}');
    const link = path.join(tmpDataDir(), 'to-data');
    fs.symlinkSync(env.CROSSTALK_DATA_DIR, link);
    // By its real path it was refused; by a link to the data dir it was let through (and made inside it).
    expect(() => loadConfig({ ...withFile(JSON.stringify({ agents: [{ id: 'main', workspace: path.join(env.CROSSTALK_DATA_DIR, 'ws') }] })), CROSSTALK_DATA_DIR: env.CROSSTALK_DATA_DIR })).toThrow(/inside the data dir/);
    const cfg = withFile(JSON.stringify({ agents: [{ id: 'main', workspace: path.join(link, 'ws') }] }));
    expect(() => loadConfig({ ...cfg, CROSSTALK_DATA_DIR: env.CROSSTALK_DATA_DIR })).toThrow(/inside the data dir/);
    const up = path.join(tmpDataDir(), 'to-parent');
    fs.symlinkSync(path.dirname(env.CROSSTALK_DATA_DIR), up);
    expect(() => loadConfig({ ...withFile(JSON.stringify({ agents: [{ id: 'main', workspace: up }] })), CROSSTALK_DATA_DIR: env.CROSSTALK_DATA_DIR })).toThrow(/contains the data dir/);
    expect(() => loadConfig({ ...env, DATABASE_URL: 'mysql://x/y' })).toThrow(/DATABASE_URL must be a postgres:\/\//);
    expect(loadConfig({ ...env, DATABASE_URL: 'postgresql://127.0.0.1/x' }).databaseUrl).toBe('postgresql://127.0.0.1/x');
  });

  it('checks every channel\'s settings at start, naming the key path: its plugin\'s keys, agentId, unknown keys (before: started, then every send and inbound message failed)', () => {
    const ch = (channels: unknown) => () => loadConfig(withFile(JSON.stringify({ channels })));
    expect(ch({ telegram: { botToken: 5 } })).toThrow(/bad key "channels\.telegram\.botToken": Invalid input: expected string, received number/);
    expect(ch({ telegram: {} })).toThrow(/bad key "channels\.telegram\.botToken"/);
    expect(ch({ telegram: { botToken: 't', agentId: 'nope' } })).toThrow(/bad key "channels\.telegram\.agentId": no agent "nope" \(agents: main, researcher, writer\)/);
    expect(ch({ telegram: { botToken: 't', allowfrom: ['1'] } })).toThrow(/bad key "channels\.telegram\.allowfrom": unknown key \(did you mean allowFrom\?\)/);
    expect(ch({ telegram: { botToken: 't', bogusKey: 1 } })).toThrow(/bad key "channels\.telegram\.bogusKey": unknown key$/);
    expect(ch({ slack: { botToken: 't', maxAttempts: 0 } })).toThrow(/bad key "channels\.slack\.maxAttempts"/);
    expect(ch({ webchat: { bogus: 1 } })).toThrow(/bad key "channels\.webchat\.bogus": unknown key/);
    // An account's own keys are named under it; merged over the channel's, as sends read them.
    expect(ch({ telegram: { botToken: 't', accounts: { work: { botTokn: 'x' } } } })).toThrow(/bad key "channels\.telegram\.accounts\.work\.botTokn": unknown key \(did you mean botToken\?\)/);
    expect(ch({ telegram: { botToken: 't', accounts: { work: { agentId: 'ghost' } } } })).toThrow(/bad key "channels\.telegram\.accounts\.work\.agentId": no agent "ghost"/);
    expect(ch({ telegram: { botToken: 't', accounts: { work: { botToken: 'u', agentId: 'writer' } } } })).not.toThrow();
    // The message is the config loader's: one line with the file, as for every other bad key.
    try {
      ch({ telegram: { botToken: 't', agentId: 'nope' } })();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as Error).message.split('\n')).toHaveLength(1);
    }
  });

  it('every channel takes the keys README documents for it, and the shared ones', () => {
    // README, the channel table, and "Every channel also takes …".
    const shared = { apiBaseUrl: 'http://127.0.0.1:9', timeoutMs: 5000, maxAttempts: 2, maxRetryAfterMs: 1000, retryBaseMs: 100, agentId: 'writer', dmPolicy: 'allowlist', allowFrom: ['1', 2], approvers: ['1'], accounts: { other: { apiBaseUrl: 'http://127.0.0.1:8' } } };
    const documented: Record<string, Record<string, unknown>> = {
      webchat: {},
      webhook: { url: 'http://127.0.0.1:9/in', secret: 's' },
      telegram: { botToken: 't', webhookSecret: 's' },
      slack: { botToken: 't', signingSecret: 's' },
      discord: { botToken: 't', publicKey: 'a'.repeat(64), relaySecret: 's' },
      matrix: { accessToken: 't', userId: '@bot:example.org' },
      msteams: { appId: 'a', appPassword: 'p', tenantId: 't', tokenUrl: 'http://127.0.0.1:9/token' },
      mattermost: { botToken: 't', botUserId: 'u', outgoingToken: 'o' },
      bluebubbles: { password: 'p', method: 'private-api' },
      'nextcloud-talk': { username: 'u', appPassword: 'p' },
      zalo: { botToken: 't' },
      zalouser: {},
      nostr: { privateKey: 'f'.repeat(64), relays: ['wss://relay.example.org'] },
      tlon: { ship: '~sampel-palnet', code: 'c' },
      voice: { url: 'http://127.0.0.1:9/speak', secret: 's' },
    };
    const channels = Object.fromEntries(Object.entries(documented).map(([id, keys]) => [id, { ...shared, ...keys }]));
    expect(Object.keys(loadConfig(withFile(JSON.stringify({ channels }))).channels)).toHaveLength(15);
  });
});
