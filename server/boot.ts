// Builds the runtime: config → store → event bus → tools → orchestrator → gateway; then recovers unfinished runs.
import { resolveToken } from './auth';
import { type ChannelService, createChannels } from './channels';
import { isApiPath, serveApi } from './http/node-routes';
import { ConfigError, configFilePath, type CrosstalkConfig, loadConfig } from './config';
import { EventBus } from './events/bus';
import { deliveryEmitter } from './events/delivery-events';
import { registerWebhookRetry } from './gateway/deliveries';
import { GatewayService } from './gateway/service';
import type { Gateway } from './gateway/types';
import { createLogger, type Logger } from './logger';
import { McpManager } from './mcp/manager';
import { createMetrics, type Metrics } from './metrics';
import { Delegates } from './orchestrator/delegates';
import { Orchestrator } from './orchestrator/orchestrator';
import type { FullRuntime } from './runtime-types';
import { DataDirInUseError, openDatabase } from './store/db';
import { Store } from './store/store';
import { mainSessionKey } from './sessions/keys';
import { registerTools, unknownToolKeys } from './tools/registry';
import { prepareExecIsolation } from './tools/exec-isolation';
import type { AnyToolDef } from './tools/types';
import { WebhookOutbox } from './webhooks/outbox';
import type { WebhookDispatcher } from './webhooks/deliver';
import type { Cluster } from './cluster/cluster';
import type { EventFeed } from './cluster/feed';
import { startRetention } from './store/retention';
import { Compactor } from './orchestrator/compaction';
import { Telemetry } from './telemetry/tracing';
import { Usage } from './usage/usage';
import { PushService } from './push/service';
import { newestMessageId, OWED_CLUSTER_GRACE_MS } from './channels/owed-replies';

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
  prepareExecIsolation(config, log, configFilePath()); // data dir 0700, workspaces for the exec user, a warning when exec cannot be isolated
  const handle = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, pgSchema: o.pgSchema });
  const store = new Store(handle);
  const bus = new EventBus(store, log);
  bus.head = await store.logHead();
  store.onDeliveries = deliveryEmitter(bus, (e) => log.error({ err: e }, 'could not emit a delivery event'));
  // PostgreSQL: this process joins the cluster; events reach subscribers through the feed, in log order.
  // What only PostgreSQL needs (the cluster, its feed, pg-boss for webhooks, and through it `pg`) is loaded only then:
  // "load nothing the first request does not need" (issue 24.5; bench/profile-start.ts).
  const pgOnly = handle.pg
    ? await Promise.all([import('./cluster/cluster'), import('./cluster/feed'), import('./jobs/webhooks')]).then(([c, f, w]) => ({ Cluster: c.Cluster, EventFeed: f.EventFeed, PgWebhookDispatcher: w.PgWebhookDispatcher }))
    : null;
  const cluster: Cluster | null = handle.pg && pgOnly ? new pgOnly.Cluster(store.db, handle.pg, log) : null;
  const feed: EventFeed | null = cluster && pgOnly ? new pgOnly.EventFeed(store, bus, log) : null;
  if (cluster && feed) {
    bus.feed = { written: feed.wake };
    store.eventsChannel = cluster.channel;
    store.leases = true; // runs are driven under leases: a run's write with no fence for its session is refused
  }
  const metrics = createMetrics();
  // The gateway is needed by tools and the tools by the orchestrator: break the cycle with a late-bound reference.
  let gateway: Gateway | null = null;
  const lazyGateway: Pick<Gateway, 'sessionsList' | 'chatHistory'> = {
    sessionsList: (p) => gateway!.sessionsList(p),
    chatHistory: (p) => gateway!.chatHistory(p),
  };
  const tools = new Map<string, AnyToolDef>();
  const telemetry = await Telemetry.create();
  const usage = new Usage({ store, metrics, config });
  const compactor = new Compactor({ store, bus, metrics, log, config, usage, telemetry });
  const orchestrator = new Orchestrator({ store, bus, metrics, log, config, tools, usage, telemetry, compactor });
  const delegates = new Delegates({ store, bus, orchestrator, metrics, log });
  const channels = createChannels({ config, store, bus, orchestrator, log, telemetry });
  registerTools(tools, { config, store, bus, metrics, gateway: lazyGateway, orchestrator: () => orchestrator, delegates: () => delegates, channels: () => channels, usage });
  const unknownTools = unknownToolKeys(config, tools);
  if (unknownTools.length) log.warn({ keys: unknownTools, tools: [...tools.keys()] }, `tool policy for tools that do not exist (a misspelling decides nothing): ${unknownTools.join(', ')}`);
  const onOutcome = (outcome: 'delivered' | 'retry' | 'dead') => metrics.webhooks.inc({ outcome });
  const webhooks: WebhookDispatcher = handle.pg && pgOnly
    ? new pgOnly.PgWebhookDispatcher({ store, config: config.webhooks, log, pool: handle.pg.pool, pgSchema: handle.pg.schema, listener: cluster ?? undefined, onOutcome, telemetry })
    : new WebhookOutbox(store, config.webhooks, log, onOutcome, telemetry);
  store.webhookJobs = webhooks.enqueueIn?.bind(webhooks);
  registerWebhookRetry(store, webhooks);
  orchestrator.webhooks = webhooks;
  const mcp = new McpManager({ config, tools, bus, log, store });
  // Web Push: the VAPID keys are made (once, race-safe) before anything can ask for them; new pending items are pushed.
  const push = new PushService({
    store,
    bus,
    log,
    config,
    resolve: (approvalId, decision, reason, by) => orchestrator.approvals.resolve(approvalId, decision, reason, by),
    onOutcome: (state) => metrics.pushes.inc({ outcome: state }),
  });
  await push.start();
  gateway = new GatewayService({ push, config, store, bus, orchestrator, tools, delegates, metrics, channels, cluster, mcpStatus: () => mcp.status(), usage, compactor, log });
  mcp.start(); // in the background, before recovery re-drives runs that may call MCP tools
  if (cluster && feed) {
    orchestrator.cluster = cluster;
    await feed.start();
    feed.interest = () => bus.subscriberCount > 0 || orchestrator.waitingElsewhere();
    feed.onEvent = (ev) => {
      if (ev.stream === 'lifecycle' && (ev.data.phase === 'end' || ev.data.phase === 'error')) orchestrator.remoteEnded(ev.runId);
    };
    await cluster.start({
      onControl: (m) => void orchestrator.onControl(m).catch((e) => log.error({ err: e }, 'control message failed')),
      onEvents: feed.wake,
      onOrphans: () => {
        orchestrator.sweepOrphans();
        void channels.closeOrphanedSends(); // channel sends a dead process left mid-call
      },
      onFenced: () => orchestrator.fenced(),
      // Replies the dead process owed: now, and once its last rows are past the grace that keeps live ones out.
      onDeath: () => {
        void channels.sendOwedReplies({ graceMs: OWED_CLUSTER_GRACE_MS });
        setTimeout(() => void channels.sendOwedReplies({ graceMs: OWED_CLUSTER_GRACE_MS }), OWED_CLUSTER_GRACE_MS + 1000).unref();
      },
    });
  }
  await webhooks.start(); // before recovery: runs it ends enqueue their webhooks' jobs
  // SQLite: channel sends the last process left mid-call are closed before recovery re-drives anything.
  if (!cluster) await channels.closeOrphanedSends();
  // SQLite: the replies the last process owed are among the rows there now (recovery and new turns write later ones).
  const owedUpTo = cluster ? undefined : await newestMessageId(store);
  await orchestrator.recover();
  channels.start();
  if (owedUpTo !== undefined) void channels.sendOwedReplies({ graceMs: 0, upTo: owedUpTo });
  const retention = startRetention(store, log); // tables that only grow get limits (server/store/retention.ts)
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
    cluster,
    feed,
    mcp,
    usage,
    telemetry,
    compactor,
    tools,
    push,
    nodeApi(req, res) {
      if (!isApiPath(req.url)) return false;
      serveApi(rt, req, res);
      return true;
    },
    async roomQuery(path, input) {
      return (await import('./http/trpc')).roomQuery(rt, path, input);
    },
    async close() {
      await mcp.stop();
      push.stop();
      await orchestrator.shutdown();
      await channels.idle();
      channels.stop();
      await webhooks.stop(); // after the runs: their ends still enqueue webhooks
      await retention.stop();
      await store.foldsSettled(); // the folds of the runs that ended (each one transaction)
      feed?.stop();
      await cluster?.stop();
      await telemetry.shutdown();
      await store.close();
    },
  };
  // A2A push configs of tasks still running (server/a2a); the A2A SDK loads only when there are some (its routes load it on their first request).
  if ((await store.db.selectFrom('a2a_push_configs').select('task_id').limit(1).execute()).length > 0) await (await import('./a2a/http')).startA2A(rt);
  return rt;
}

/**
 * The production boot: reads env + config file (or takes `given`, read by a caller that needed it first: the worker
 * listens before it boots); a bad config stops the start with a message naming the key.
 */
export async function bootRuntime(given?: CrosstalkConfig): Promise<FullRuntime> {
  const log = createLogger();
  let config: CrosstalkConfig;
  try {
    config = given ?? loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`crosstalk: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
  let rt: FullRuntime;
  try {
    // CROSSTALK_PG_SCHEMA: every table in that PostgreSQL schema (several clusters, or a bench, in one database).
    rt = await createRuntime({ config, log, pgSchema: config.databaseUrl ? process.env.CROSSTALK_PG_SCHEMA || undefined : undefined });
  } catch (e) {
    if (e instanceof DataDirInUseError) {
      console.error(e.message);
      process.exit(1);
    }
    // The store could not be opened (PostgreSQL unreachable, its database missing; a data dir that is a file …):
    // one line saying why, not an uncaught exception's dump.
    console.error(`crosstalk: could not start: ${(e as Error).message || String(e)}`);
    log.error({ err: e }, 'start failed');
    process.exit(1);
  }
  const url = `http://${config.host}:${config.port}`;
  rt.cluster?.setUrl(url);
  if (!config.token) console.log(`crosstalk: open ${url}/login?token=${encodeURIComponent(rt.token)}`);
  log.info({ url, store: config.databaseUrl ? 'postgres' : 'sqlite', node: process.version, agents: config.agents.map((a) => a.id) }, 'crosstalk ready');
  return rt;
}
