// Builds the runtime: config → store → event bus → tools → orchestrator → gateway; then recovers unfinished runs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolveToken } from './auth';
import { type ChannelService, createChannels } from './channels';
import { handleGatewayNode } from './http/node-gateway';
import { ConfigError, type CrosstalkConfig, loadConfig } from './config';
import { EventBus } from './events/bus';
import { GatewayService } from './gateway/service';
import type { Gateway } from './gateway/types';
import { createLogger, type Logger } from './logger';
import { createMetrics, type Metrics } from './metrics';
import { Delegates } from './orchestrator/delegates';
import { Orchestrator } from './orchestrator/orchestrator';
import type { Runtime } from './runtime';
import { openDatabase } from './store/db';
import { Store } from './store/store';
import { mainSessionKey } from './sessions/keys';
import { registerTools } from './tools/registry';
import type { AnyToolDef } from './tools/types';
import { WebhookOutbox } from './webhooks/outbox';
import { Compactor } from './orchestrator/compaction';
import { Telemetry } from './telemetry/tracing';
import { Usage } from './usage/usage';

export interface FullRuntime extends Runtime {
  store: Store;
  bus: EventBus;
  orchestrator: Orchestrator;
  metrics: Metrics;
  log: Logger;
  webhooks: WebhookOutbox;
  delegates: Delegates;
  usage: Usage;
  telemetry: Telemetry;
  compactor: Compactor;
  /** The tool registry every agent's model sees (built-in, channel and MCP tools). */
  tools: Map<string, AnyToolDef>;
  channels: ChannelService;
  /** POST /api/gateway on bare node:http, for servers that route it before Next (scripts/start.mjs). */
  nodeGateway(req: IncomingMessage, res: ServerResponse): void;
}

export interface CreateRuntimeOptions {
  config: CrosstalkConfig;
  log?: Logger;
  /** PostgreSQL schema (tests isolate themselves on one database this way). */
  pgSchema?: string;
}

export async function createRuntime(o: CreateRuntimeOptions): Promise<FullRuntime> {
  const { config } = o;
  const log = o.log ?? createLogger();
  const { token } = resolveToken(config.token, config.dataDir);
  const handle = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, pgSchema: o.pgSchema });
  const store = new Store(handle);
  const bus = new EventBus(store, log);
  const last = await store.db.selectFrom('events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
  bus.lastId = Number(last?.m ?? 0);
  const metrics = createMetrics();
  // The gateway is needed by tools and the tools by the orchestrator: break the cycle with a late-bound reference.
  let gateway: Gateway | null = null;
  const lazyGateway: Pick<Gateway, 'sessionsList' | 'chatHistory'> = {
    sessionsList: (p) => gateway!.sessionsList(p),
    chatHistory: (p) => gateway!.chatHistory(p),
  };
  const tools = new Map<string, AnyToolDef>();
  const telemetry = new Telemetry();
  const usage = new Usage({ store, metrics, config });
  const compactor = new Compactor({ store, bus, metrics, log, config, usage, telemetry });
  const orchestrator = new Orchestrator({ store, bus, metrics, log, config, tools, usage, telemetry, compactor });
  const delegates = new Delegates({ store, bus, orchestrator, metrics, log });
  const channels = createChannels({ config, store, bus, orchestrator, log, telemetry });
  registerTools(tools, { config, store, bus, metrics, gateway: lazyGateway, orchestrator: () => orchestrator, delegates: () => delegates, channels: () => channels, usage });
  const webhooks = new WebhookOutbox(store, config.webhooks, log, (outcome) => metrics.webhooks.inc({ outcome }), telemetry);
  orchestrator.webhooks = webhooks;
  gateway = new GatewayService({ config, store, bus, orchestrator, tools, delegates, metrics, channels, usage, compactor });
  await orchestrator.recover();
  webhooks.start();
  channels.start();
  // The room opens the default agent's main session: it exists from the first start.
  await store.ensureSession({ key: mainSessionKey(config.defaultAgentId), agentId: config.defaultAgentId, kind: 'main' });
  const rt: FullRuntime = {
    config,
    token,
    gateway,
    store,
    bus,
    orchestrator,
    metrics,
    log,
    webhooks,
    delegates,
    channels,
    usage,
    telemetry,
    compactor,
    tools,
    nodeGateway(req, res) {
      handleGatewayNode(rt, req, res);
    },
    async close() {
      webhooks.stop();
      orchestrator.shutdown();
      await orchestrator.idle();
      await channels.idle();
      channels.stop();
      await telemetry.shutdown();
      await store.close();
    },
  };
  return rt;
}

/** The production boot: reads env + config file; a bad config stops the start with a message naming the key. */
export async function bootRuntime(): Promise<FullRuntime> {
  const log = createLogger();
  let config: CrosstalkConfig;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`crosstalk: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
  const rt = await createRuntime({ config, log });
  const url = `http://${config.host}:${config.port}`;
  if (!config.token) console.log(`crosstalk: open ${url}/login?token=${encodeURIComponent(rt.token)}`);
  log.info({ url, store: config.databaseUrl ? 'postgres' : 'sqlite', node: process.version, agents: config.agents.map((a) => a.id) }, 'crosstalk ready');
  return rt;
}
