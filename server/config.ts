// Configuration: environment plus the optional JSON config file (CONTRACT §1), validated with zod.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseModelSpec, validateModelSpec } from './models/registry';
import { CHANNEL_IDS } from './channels/ids';
import { realPrefix } from './real-path';
import { checkChannelSettings, checkChannelTrustConfig } from './trust/channel-config';
import { createChannelRegistry } from './channels/registry';
import { baseChannelConfig } from './channels/delivery';
import { checkEnvNumbers, EnvNumberError, envNumber } from './env-number.mjs';
import { logLevelProblem } from './logger';

export const toolPolicySchema = z.enum(['auto', 'ask', 'deny']);
export type ToolPolicy = z.infer<typeof toolPolicySchema>;

export const queueModeSchema = z.enum(['steer', 'followup', 'collect', 'interrupt', 'reject']);
export type QueueMode = z.infer<typeof queueModeSchema>;

const agentIdSchema = z.string().regex(/^[a-z0-9._+-]+$/, 'agent ids are lowercase [a-z0-9._+-]');

const limitsSchema = z
  .object({
    sendMessagePerRun: z.number().int().min(0).default(5),
    outboundPerRun: z.number().int().min(0).default(10),
    maxDelegateDepth: z.number().int().min(0).default(3),
    maxDelegatesPerParent: z.number().int().min(1).default(8),
    maxSteps: z.number().int().min(1).max(1000).default(24),
  })
  .strict();

/**
 * The server's own secrets, which `exec.env` may not name: a command (a prompt-injected model's) would get the gateway's
 * token, the store's URL or the model keys. Other names (a GITHUB_TOKEN for the agent's work) may be passed on.
 */
const SERVER_SECRETS = /^(CROSSTALK_TOKEN|CROSSTALK_SECRET|CROSSTALK_COMPAT_API_KEY|DATABASE_URL|PGPASSWORD|OPENAI_API_KEY|ANTHROPIC_API_KEY|OTEL_EXPORTER_OTLP(_TRACES)?_HEADERS)$/;

const agentSchema = z
  .object({
    id: agentIdSchema,
    name: z.string().optional(),
    persona: z.string().optional(),
    model: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).default('scripted'),
    reply: z.enum(['auto', 'tool']).default('auto'),
    tools: z.record(z.string(), toolPolicySchema).default({}),
    channelTools: z.record(z.string(), toolPolicySchema).optional(),
    exec: z
      .object({
        env: z
          .array(
            z
              .string()
              .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names only')
              .refine((n) => !SERVER_SECRETS.test(n), { message: "one of the server's own secrets (its token, database URL, model API keys): never passed to exec (README, Security)" }),
          )
          .default([]),
        user: z.string().regex(/^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}$/, 'a user name').optional(),
      })
      .strict()
      .optional(),
    workspace: z.string().optional(),
    system: z.string().optional(),
    limits: limitsSchema.partial().default({}),
    /** MCP servers this agent sees (default: all). */
    mcp: z.array(z.string().min(1)).optional(),
    /** A remote A2A agent: this agent's turns run there (CONTRACT §8). */
    a2a: z.object({ url: z.string().url(), token: z.string().optional(), timeoutMs: z.number().int().positive().optional(), maxReplyBytes: z.number().int().positive().optional() }).strict().optional(),
    /** What one request tree started at this agent may spend before a person is asked (CONTRACT §5 "Budgets"). */
    budget: z.object({ usd: z.number().positive().optional(), tokens: z.number().int().positive().optional() }).strict().optional(),
    /** A model between an `ask` call and the person (CONTRACT §5 "Reviewer"). */
    reviewer: z
      .object({
        model: z.string({ error: 'the reviewer\'s model spec (e.g. "scripted" or "openai:gpt-4o-mini")' }).min(1, 'the reviewer\'s model spec must not be empty'),
        escalateAfterDenials: z.number({ error: 'a whole number of denials (0 = never)' }).int('a whole number of denials (0 = never)').min(0, 'a whole number of denials (0 = never)').default(2),
        instructions: z.string().max(20_000).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/**
 * `mcp.servers.<name>.oauth` (streamable HTTP): what crosstalk presents to the server's authorization server. Every key is
 * optional: without them crosstalk registers itself (dynamic registration) or uses a client-ID metadata document.
 */
const mcpOAuthSchema = z
  .object({
    /** Pre-registered client credentials, for an authorization server without registration. */
    clientId: z.string().min(1).optional(),
    clientSecret: z.string().min(1).optional(),
    /** Scopes asked for when neither the server's WWW-Authenticate nor its metadata names any. */
    scope: z.string().min(1).optional(),
    /** An HTTPS URL of crosstalk's client-ID metadata document, used as the client id where the authorization server takes one. */
    clientMetadataUrl: z.string().url().optional(),
  })
  .strict();

const mcpServerSchema = z.union([
  z.object({ command: z.string().min(1), args: z.array(z.string()).optional(), env: z.record(z.string(), z.string()).optional(), cwd: z.string().optional() }).strict(),
  z.object({ url: z.string().url(), headers: z.record(z.string(), z.string()).optional(), oauth: mcpOAuthSchema.optional() }).strict(),
]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type McpOAuthConfig = z.infer<typeof mcpOAuthSchema>;
/** `models.<spec>`: context window and prices (USD per million tokens) of one model spec (CONTRACT §1). */
const modelSettingsSchema = z
  .object({
    contextWindow: z.number().int().min(256).optional(),
    inputPerMTok: z.number().min(0).optional(),
    outputPerMTok: z.number().min(0).optional(),
    cachedInputPerMTok: z.number().min(0).optional(),
  })
  .strict();
export type ModelSettings = z.infer<typeof modelSettingsSchema>;

const compactionSchema = z
  .object({ threshold: z.number().gt(0).max(1).default(0.8), keepRecent: z.number().int().min(1).max(1000).default(20) })
  .strict()
  .default({ threshold: 0.8, keepRecent: 20 });

const configSchema = z
  .object({
    agents: z.array(agentSchema).min(1).optional(),
    session: z
      .object({
        dmScope: z.enum(['main', 'per-peer', 'per-channel-peer', 'per-account-channel-peer']).default('per-channel-peer'),
        queueMode: queueModeSchema.default('steer'),
        identityLinks: z.record(z.string(), z.array(z.string())).default({}),
        contextMessages: z.number().int().min(1).max(10_000).default(200),
      })
      .strict()
      .default({ dmScope: 'per-channel-peer', queueMode: 'steer', identityLinks: {}, contextMessages: 200 }),
    webhooks: z
      .object({
        allowPrivateNetwork: z.boolean().default(false),
        retryBaseMs: z.number().int().min(1).default(1000),
        maxAttempts: z.number().int().min(1).default(8),
        timeoutMs: z.number().int().min(100).default(10_000),
      })
      .strict()
      .default({ allowPrivateNetwork: false, retryBaseMs: 1000, maxAttempts: 8, timeoutMs: 10_000 }),
    channels: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
    limits: limitsSchema.partial().default({}),
    mcp: z
      .object({
        servers: z.record(z.string().regex(/^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/, 'MCP server names are [A-Za-z0-9_-] with no "__"'), mcpServerSchema).default({}),
        reconnectBaseMs: z.number().int().min(1).default(500),
        reconnectMaxMs: z.number().int().min(1).default(30_000),
        /** How often a connected server is pinged, so one that died while idle is reported before the next call (0: never). */
        pingIntervalMs: z.number().int().min(0).default(30_000),
        /** The OAuth redirect URI: crosstalk's own `/api/mcp/oauth/callback` as the browser reaches it (default: the listen address). */
        callbackUrl: z.string().url().optional(),
      })
      .strict()
      .default({ servers: {}, reconnectBaseMs: 500, reconnectMaxMs: 30_000, pingIntervalMs: 30_000 }),
    models: z.record(z.string(), modelSettingsSchema).default({}),
    compaction: compactionSchema,
  })
  .strict();

export type RawConfig = z.infer<typeof configSchema>;
export type AgentLimits = z.infer<typeof limitsSchema>;

export interface AgentConfig {
  id: string;
  name: string;
  persona: string;
  models: string[];
  reply: 'auto' | 'tool';
  tools: Record<string, ToolPolicy>;
  /** The policy for runs a channel sender started (CONTRACT §5 "Trust"); see server/trust/policy.ts. */
  channelTools: Record<string, ToolPolicy>;
  /** Names of server environment variables `exec` passes on (besides PATH, HOME, LANG). */
  execEnv: string[];
  /** The user `exec` runs as when the server runs as root (CONTRACT §5 "exec isolation"); default `nobody`. */
  execUser: string;
  workspace: string;
  system?: string;
  limits: AgentLimits;
  /** MCP servers this agent sees; undefined = all. */
  mcp?: string[];
  /** Set for a remote A2A agent (CONTRACT §8). */
  a2a?: { url: string; token?: string; timeoutMs?: number; maxReplyBytes?: number };
  /** The cap of a request tree started at this agent (CONTRACT §5 "Budgets"). */
  budget?: { usd?: number; tokens?: number };
  /** The model that decides `ask` calls before the person (CONTRACT §5 "Reviewer"). */
  reviewer?: { model: string; escalateAfterDenials: number; instructions?: string };
}

export interface CrosstalkConfig {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  token?: string;
  agents: AgentConfig[];
  defaultAgentId: string;
  session: RawConfig['session'];
  webhooks: RawConfig['webhooks'];
  channels: RawConfig['channels'];
  mcp: RawConfig['mcp'];
  models: RawConfig['models'];
  compaction: RawConfig['compaction'];
}

const DEFAULT_AGENTS = [
  { id: 'main', name: 'Main', persona: 'Main' },
  { id: 'researcher', name: 'Researcher', persona: 'Researcher' },
  { id: 'writer', name: 'Writer', persona: 'Writer' },
];

export class ConfigError extends Error {}

/** The config file read: CROSSTALK_CONFIG, else ./crosstalk.config.json (which may not exist). */
export function configFilePath(env: Record<string, string | undefined> = process.env): string {
  return env.CROSSTALK_CONFIG ?? path.resolve(/* turbopackIgnore: true */ process.cwd(), 'crosstalk.config.json');
}

/** Reads env + config file. Throws ConfigError naming the bad key when the file does not validate. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<RawConfig> = {}): CrosstalkConfig {
  const explicit = env.CROSSTALK_CONFIG;
  const file = configFilePath(env);
  let raw: unknown = {};
  if (explicit || fs.existsSync(/* turbopackIgnore: true */ file)) {
    let text: string;
    try {
      text = fs.readFileSync(/* turbopackIgnore: true */ file, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read config file ${file}: ${(e as Error).message}`);
    }
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new ConfigError(`config file ${file} is not valid JSON: ${(e as Error).message}`);
    }
  }
  // A file that parses to null, a number, a string or an array is no config (spread, it read as no keys at all, or
  // as index keys: a start on the defaults, or a message about key "0").
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`config ${file}: must be a JSON object (got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw})`);
  const parsed = configSchema.safeParse({ ...(raw as object), ...overrides });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(root)');
    const detail = issue.code === 'unrecognized_keys' ? `unknown key ${issue.keys.join(', ')}` : issue.message;
    throw new ConfigError(`config ${file}: bad key "${key}": ${detail}`);
  }
  const badChannel = checkChannelTrustConfig(parsed.data.channels);
  if (badChannel) throw new ConfigError(`config ${file}: ${badChannel}`);
  return resolveConfig(parsed.data, env);
}

export function parseRawConfig(raw: unknown): RawConfig {
  return configSchema.parse(raw);
}

export function resolveConfig(cfg: RawConfig, env: Record<string, string | undefined> = process.env): CrosstalkConfig {
  checkEnv(env);
  // Empty is unset, as for PORT and CROSSTALK_TOKEN (before, `CROSSTALK_DATA_DIR=` made the start directory the data dir).
  const dataDir = path.resolve(/* turbopackIgnore: true */ process.cwd(), env.CROSSTALK_DATA_DIR || './data');
  const baseLimits = limitsSchema.parse(cfg.limits ?? {});
  const agentsRaw = cfg.agents ?? DEFAULT_AGENTS.map((a) => agentSchema.parse(a));
  // Keys that name nothing are refused, as unknown keys are (before, these started with no word and did nothing).
  for (const id of Object.keys(cfg.channels)) {
    if (!(CHANNEL_IDS as readonly string[]).includes(id)) throw new ConfigError(`config: bad key "channels.${id}": no such channel (${CHANNEL_IDS.join(', ')})`);
  }
  for (const spec of Object.keys(cfg.models)) {
    const m = parseModelSpec(spec);
    if (!m.ok) throw new ConfigError(`config: bad key "models.${spec}": ${m.error}`);
  }
  const seen = new Set<string>();
  const agents: AgentConfig[] = agentsRaw.map((a, i) => {
    if (seen.has(a.id)) throw new ConfigError(`config: bad key "agents": duplicate agent id ${a.id}`);
    seen.add(a.id);
    for (const spec of Array.isArray(a.model) ? a.model : [a.model]) {
      const bad = validateModelSpec(spec, env);
      if (bad) throw new ConfigError(`config: bad key "agents.${i}.model": ${bad}`);
    }
    // An MCP server the agent names must be configured: a misspelt name hid every server's tools from it, unsaid.
    a.mcp?.forEach((name, j) => {
      if (!Object.hasOwn(cfg.mcp.servers, name)) throw new ConfigError(`config: bad key "agents.${i}.mcp.${j}": no MCP server "${name}" in mcp.servers`);
    });
    const badReviewer = a.reviewer ? validateModelSpec(a.reviewer.model, env) : null;
    if (badReviewer) throw new ConfigError(`config: bad key "agents.${i}.reviewer.model": ${badReviewer}`);
    const name = a.name ?? a.id.charAt(0).toUpperCase() + a.id.slice(1);
    const workspace = resolveWorkspace(a.workspace, a.id, dataDir, env);
    if (typeof workspace !== 'string') throw new ConfigError(`config: bad key "agents.${i}.workspace": ${workspace.error}`);
    return {
      id: a.id,
      name,
      persona: a.persona ?? name,
      models: Array.isArray(a.model) ? a.model : [a.model],
      reply: a.reply,
      tools: a.tools,
      channelTools: a.channelTools ?? {},
      execEnv: a.exec?.env ?? [],
      execUser: a.exec?.user ?? 'nobody',
      workspace,
      system: a.system,
      limits: { ...baseLimits, ...a.limits },
      ...(a.mcp ? { mcp: a.mcp } : {}),
      ...(a.a2a ? { a2a: a.a2a } : {}),
      ...(a.reviewer ? { reviewer: { model: a.reviewer.model.trim(), escalateAfterDenials: a.reviewer.escalateAfterDenials, ...(a.reviewer.instructions ? { instructions: a.reviewer.instructions } : {}) } } : {}),
      ...(a.budget && (a.budget.usd !== undefined || a.budget.tokens !== undefined) ? { budget: a.budget } : {}),
    };
  });
  // Every channel's settings as its plugin reads them on each send and inbound message (before: only the trust keys,
  // so a bad token type, an unknown agentId or a misspelt key started and failed every message later).
  if (cfg.channels && Object.keys(cfg.channels).length) {
    const plugins = createChannelRegistry();
    const badChannel = checkChannelSettings(cfg.channels, {
      schemaOf: (id) => {
        const s = plugins.get(id)?.configSchema;
        return s instanceof z.ZodObject ? s : z.object(baseChannelConfig);
      },
      agentIds: agents.map((a) => a.id),
    });
    if (badChannel) throw new ConfigError(`config: ${badChannel}`);
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: envNumber('PORT', env),
    dataDir,
    databaseUrl: databaseUrlOf(env.DATABASE_URL),
    token: env.CROSSTALK_TOKEN || undefined,
    agents,
    defaultAgentId: agents[0]!.id,
    session: cfg.session,
    webhooks: cfg.webhooks,
    channels: cfg.channels,
    mcp: cfg.mcp,
    models: cfg.models ?? {},
    compaction: cfg.compaction ?? { threshold: 0.8, keepRecent: 20 },
  };
}

/** The MCP server an `mcp__<server>__<tool>` name belongs to (server names hold no `__`), or undefined. */
export const mcpServerOf = (tool: string): string | undefined => /^mcp__(.+?)__/.exec(tool)?.[1];

/**
 * What a policy map (`tools`, `channelTools`) says of a tool: its name, then (an MCP tool) `mcp__<server>__*`, then
 * `*`; undefined when none of them is there.
 */
export function policyIn(map: Record<string, ToolPolicy>, tool: string): ToolPolicy | undefined {
  const own = (k: string) => (Object.hasOwn(map, k) ? map[k] : undefined);
  const server = mcpServerOf(tool);
  return own(tool) ?? (server !== undefined ? own(`mcp__${server}__*`) : undefined) ?? own('*');
}

/**
 * The tool policy an agent has for a tool (`policyIn` its `tools`); unnamed tools are auto, except exec and MCP tools
 * which are ask (CONTRACT §1). An MCP server's hints never weaken this. `"*"` is read as in `channelTools`: before, it
 * was accepted and read by nothing, so `{"*": "deny"}` left every tool but exec and MCP tools `auto`.
 */
export function toolPolicyFor(agent: AgentConfig, tool: string): ToolPolicy {
  return policyIn(agent.tools, tool) ?? (mcpServerOf(tool) !== undefined || tool === 'exec' ? 'ask' : 'auto');
}

/**
 * An agent's workspace: relative paths resolve against the start directory; the default is
 * `./workspaces/<agentId>` there (`CROSSTALK_WORKSPACES` moves the parent). Never inside the data dir (the token,
 * the store) and never a folder that holds the data dir.
 */
function resolveWorkspace(configured: string | undefined, agentId: string, dataDir: string, env: Record<string, string | undefined>): string | { error: string } {
  const cwd = process.cwd();
  const ws = configured
    ? path.resolve(/* turbopackIgnore: true */ cwd, configured)
    : path.resolve(/* turbopackIgnore: true */ cwd, env.CROSSTALK_WORKSPACES ?? 'workspaces', agentId);
  const within = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
  // Compared as the folders they are (symlinks followed), not as text: a link to the data dir is the data dir.
  const [realWs, realData] = [realPrefix(ws), realPrefix(dataDir)];
  if (within(ws, dataDir) || within(realWs, realData)) return { error: `workspace ${ws} is inside the data dir ${dataDir} (the token and the store live there)` };
  if (within(dataDir, ws) || within(realData, realWs)) return { error: `workspace ${ws} contains the data dir ${dataDir} (the token and the store live there)` };
  return ws;
}

/**
 * The environment's settings that are checked, not just read: every numeric variable (server/env-number.mjs: PORT,
 * CROSSTALK_*_MS, CROSSTALK_PG_POOL, …) and CROSSTALK_LOG_LEVEL. A bad one stops the start naming it and what is
 * allowed, before anything is started (before: a NaN timer, a 1 ms sweep, a pool that never connects, a stack trace).
 */
export function checkEnv(env: Record<string, string | undefined> = process.env): void {
  try {
    checkEnvNumbers(env);
  } catch (e) {
    if (e instanceof EnvNumberError) throw new ConfigError(e.message);
    throw e;
  }
  const level = logLevelProblem(env);
  if (level) throw new ConfigError(level);
}

/** `DATABASE_URL` switches to PostgreSQL (CONTRACT §1): a URL of another scheme is refused, not tried as one. */
function databaseUrlOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  if (!/^postgres(ql)?:\/\//i.test(url)) throw new ConfigError(`DATABASE_URL must be a postgres:// (or postgresql://) URL; got scheme ${JSON.stringify(url.split(':')[0])}`);
  return url;
}
