// The run-once list: server/ test suites that do not depend on the store under test, read by vitest.config.mts.
//
// A PostgreSQL pass (TEST_STORE=postgres) would run these exactly as the SQLite pass does, so they run once, in the
// vitest project "once", with CROSSTALK_TEST_STORE_INDEPENDENT=1: there, asking for the store under test
// (store-under-test.ts: TEST_STORE, or a harness server without a store of its own) throws, so a suite that does use
// it fails instead of silently losing its PostgreSQL run (store-under-test.test.ts). A suite not listed runs on both.
export const STORE_INDEPENDENT: readonly string[] = [
  'server/testing/store-under-test.test.ts',
  // The test children's bundle (a SQLite child of its own).
  'server/testing/child-bundle.test.ts',
  // No store at all: configuration, routing, model adapters, the lazy boot (a child process of its own).
  'server/boot-lazy.test.ts',
  'server/http/static-assets.test.ts',
  'server/http/stop-accepting.test.ts',
  'server/http/pages-worker.test.ts',
  'server/http/thread-priority.test.ts',
  'server/config.test.ts',
  'server/tools/registry.test.ts',
  'server/channels/approval-wire.test.ts',
  'server/channels/routing.test.ts',
  'server/channels/split-text.test.ts',
  'server/mcp/config.test.ts',
  'server/mcp/elicit-content.test.ts',
  'server/mcp/call-routing.test.ts',
  'server/env-number.test.ts',
  'server/worker-port.test.ts',
  'server/models/fallback.test.ts',
  'server/models/providers.test.ts',
  'server/models/registry.test.ts',
  'server/models/scripted.test.ts',
  'server/models/thinking.test.ts',
  'server/store/loop-share.test.ts',
  // The MCP conformance suite's client side: its harness (scripts/mcp-conformance-client.mjs) is always on SQLite.
  'server/mcp/conformance-client.test.ts',
  // Both stores in the one file (SQLite and PostgreSQL by TEST_DATABASE_URL), or SQLite child processes by data dir.
  'server/store/store.test.ts',
  'server/store/deliveries.test.ts',
  'server/store/pool-error.test.ts',
  'server/orchestrator/delivery-crash.test.ts',
  'server/orchestrator/crash.test.ts',
  'server/mcp/orphans.test.ts',
  'server/tools/exec-deadline.test.ts',
  'server/tools/exec-namespace.test.ts',
  'server/tools/exec-fds.test.ts',
  'server/tools/exec-tree.test.ts',
  // They pick their stores themselves (PostgreSQL by TEST_DATABASE_URL, SQLite by data dir), in processes of their own.
  'server/cluster/cluster.test.ts',
  'server/cluster/crash-burst.test.ts',
  'server/cluster/delegate-callback.test.ts',
  'server/cluster/fenced-steer.test.ts',
  'server/cluster/fencing.test.ts',
  'server/cluster/graceful-stop.test.ts',
  'server/cluster/handover.test.ts',
  'server/cluster/mcp-cancel.test.ts',
  'server/cluster/idempotency.test.ts',
  'server/cluster/reregister.test.ts',
  'server/cluster/steer-takeover.test.ts',
  'server/cluster/unfenced-writes.test.ts',
  'server/cluster/wedge.test.ts',
  // PostgreSQL by TEST_DATABASE_URL in a schema of their own (a lock conflict or a lost connection raised by a trigger).
  'server/cluster/conflict-retry.test.ts',
  'server/cluster/keyed-accept.test.ts',
  'server/cluster/lock-order.test.ts',
  'server/cluster/steer-merge.test.ts',
  'server/cluster/tool-cut-off.test.ts',
  'server/jobs/webhooks.test.ts',
];
