// vitest: every suite on SQLite and server/'s suites again on PostgreSQL, in one run (`vitest run`; `TEST_STORE=postgres
// vitest run server` runs the PostgreSQL project alone) — except the run-once list (server/testing/store-independent.ts),
// project "once", guarded against the store.
import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { STORE_INDEPENDENT } from './server/testing/store-independent.ts';

const ALL = ['server/**/*.test.ts', 'lib/**/*.test.ts', 'stores/**/*.test.ts', 'bin/**/*.test.ts', 'bench/lib/**/*.test.ts'];
const once = [...STORE_INDEPENDENT];
const postgresPass = process.env.TEST_STORE === 'postgres';
// Every project's gateway child processes start from a bundle built once for the run (server/testing/child-bundle.ts).
const childBundles = 'server/testing/child-bundle-global.ts';
// The projects whose files use PostgreSQL (TEST_DATABASE_URL) get a database each, made before the file and dropped
// after it (server/testing/pg-test-db.ts): the PostgreSQL pass, and the run-once files (clusters, crash bursts, webhooks
// on pg-boss). Files side by side then never hold each other's event-log horizon, and each store's migration stays fast
// (kysely's migrator reads every schema of the database: 160 ms in an empty one, 900 ms beside 125 test schemas).
const pgFileDatabases = { globalSetup: [childBundles, 'server/testing/pg-test-db-global.ts'], setupFiles: ['server/testing/pg-test-db-setup.ts'] };

// The SQLite and PostgreSQL projects run their files one after another in each worker process (isolate: false) instead
// of a fresh process per file: each file paid ~1 s loading the server's modules again, a third of the SQLite project's
// CPU on 2 cores. Alone on this machine (BENCHMARKS.md 'Stop 46'): the SQLite project 151 → 77 s (CPU 277 → 125 s),
// the PostgreSQL one 301 → 204 s (CPU 326 → 150 s). The run-once files (child processes, clusters) keep theirs.
const sharedWorkers = { isolate: false } as const;

// server/'s suites again with every server on PostgreSQL (TEST_STORE=postgres in its workers), in the same run as the
// SQLite ones: one pool for both passes keeps both cores busy through each pass's tail (its last long files).
const postgresProject = {
  extends: true,
  test: { name: 'postgres', include: ['server/**/*.test.ts'], exclude: once, ...sharedWorkers, env: { TEST_STORE: 'postgres' }, ...pgFileDatabases },
} as const;

export default defineConfig({
  resolve: { alias: { '@': import.meta.dirname } },
  test: {
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // vitest's default is one worker per core less one: a single file at a time on 2-core CI, whose files mostly wait
    // (child processes, PostgreSQL, the server under test) or load the server's modules. One more worker than cores,
    // the SQLite and PostgreSQL projects in one pool (BENCHMARKS.md, "CI time"). Four (two more than cores) made the
    // whole run 523–558 s against 606 s with three on stop 46's machine, but its heavier load failed a test in three
    // runs of five; those failures, and the ones 4- and 5-worker runs found at stop 47, are mended ('Stop 46', 'Stop
    // 47'), and CI keeps three until more loaded runs come back green. Each
    // PostgreSQL test file has a database of its own (pgFileDatabases): on the one test database, files side by side
    // held each other's event-log horizon (settled.ts waits for every transaction of its database) and their waits
    // for settled events timed out.
    maxWorkers: Math.max(3, os.availableParallelism() + 1),
    projects: postgresPass
      ? [postgresProject]
      : [
          { extends: true, test: { name: 'once', include: once, env: { CROSSTALK_TEST_STORE_INDEPENDENT: '1' }, ...pgFileDatabases } },
          { extends: true, test: { name: 'sqlite', include: ALL, exclude: once, ...sharedWorkers, globalSetup: [childBundles] } },
          postgresProject,
        ],
  },
});
