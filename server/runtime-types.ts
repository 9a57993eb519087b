// The runtime's shape, at the bottom of the house: what boot.ts builds and every HTTP route, adapter and test takes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChannelService } from './channels';
import type { CrosstalkConfig } from './config';
import type { EventBus } from './events/bus';
import type { Gateway } from './gateway/types';
import type { Logger } from './logger';
import type { McpManager } from './mcp/manager';
import type { Metrics } from './metrics';
import type { Delegates } from './orchestrator/delegates';
import type { Orchestrator } from './orchestrator/orchestrator';
import type { Store } from './store/store';
import type { AnyToolDef } from './tools/types';
import type { WebhookDispatcher } from './webhooks/deliver';
import type { Cluster } from './cluster/cluster';
import type { EventFeed } from './cluster/feed';
import type { Compactor } from './orchestrator/compaction';
import type { Telemetry } from './telemetry/tracing';
import type { Usage } from './usage/usage';
import type { PushService } from './push/service';

export interface Runtime {
  config: CrosstalkConfig;
  /** The API token (CROSSTALK_TOKEN or the generated one in the data dir). */
  token: string;
  gateway: Gateway;
  close(): Promise<void>;
}

export interface FullRuntime extends Runtime {
  store: Store;
  bus: EventBus;
  orchestrator: Orchestrator;
  metrics: Metrics;
  log: Logger;
  /** PostgreSQL: the job engine's webhook queue (server/jobs); SQLite: an in-process loop. */
  webhooks: WebhookDispatcher;
  delegates: Delegates;
  usage: Usage;
  telemetry: Telemetry;
  compactor: Compactor;
  /** The tool registry every agent's model sees (built-in, channel and MCP tools). */
  tools: Map<string, AnyToolDef>;
  channels: ChannelService;
  /** PostgreSQL: this process's membership of the cluster, and its event feed. */
  cluster: Cluster | null;
  feed: EventFeed | null;
  mcp: McpManager;
  /** Web Push of pending items (CONTRACT §7 "Notifications"). */
  push: PushService;
  /**
   * The gateway's HTTP routes (API, event streams, A2A, MCP, login: server/http/node-routes.ts) on bare node:http, for
   * servers that route them before the pages (scripts/start.mjs). False, and nothing sent, for any other path.
   */
  nodeApi(req: IncomingMessage, res: ServerResponse): boolean;
  /** A query of the room's API for the pages' worker (`chat.history`, …), answered as JSON text (server/http/trpc.ts). */
  roomQuery(path: string, input: unknown): Promise<string>;
}
