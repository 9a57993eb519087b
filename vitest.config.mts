// vitest: every suite on SQLite (`vitest run`), then server/'s suites again on PostgreSQL (`TEST_STORE=postgres vitest run
// server`) — except the run-once list (server/testing/store-independent.ts), project "once", guarded against the store.
import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { STORE_INDEPENDENT } from './server/testing/store-independent.ts';

const ALL = ['server/**/*.test.ts', 'lib/**/*.test.ts', 'stores/**/*.test.ts', 'bin/**/*.test.ts', 'bench/lib/**/*.test.ts'];
const once = [...STORE_INDEPENDENT];
const postgresPass = process.env.TEST_STORE === 'postgres';
// The projects whose files use PostgreSQL (TEST_DATABASE_URL) get a database each, made before the file and dropped
// after it (server/testing/pg-test-db.ts): the PostgreSQL pass, and the run-once files (clusters, crash bursts, webhooks
// on pg-boss). Files side by side then never hold each other's event-log horizon, and each store's migration stays fast
// (kysely's migrator reads every schema of the database: 160 ms in an empty one, 900 ms beside 125 test schemas).
const pgFileDatabases = { globalSetup: ['server/testing/pg-test-db-global.ts'], setupFiles: ['server/testing/pg-test-db-setup.ts'] };

export default defineConfig({
  resolve: { alias: { '@': import.meta.dirname } },
  test: {
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // vitest's default is one worker per core less one: a single file at a time on 2-core CI, whose files mostly wait
    // (child processes, PostgreSQL, the server under test) or load the server's modules. Two at a time there cut a
    // 17-file PostgreSQL sample from 1,065 s to 689 s of wall at the same load (BENCHMARKS.md, "CI time").
    // The PostgreSQL pass too, since each test file has a database of its own (pgFileDatabases): on the one test
    // database, files side by side held each other's event-log horizon (settled.ts waits for every transaction of its
    // database) and their waits for settled events timed out (3 of 3 CI runs). 476 s one at a time, 155–244 s now.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    projects: postgresPass
      ? [{ extends: true, test: { name: 'postgres', include: ['server/**/*.test.ts'], exclude: once, ...pgFileDatabases } }]
      : [
          { extends: true, test: { name: 'once', include: once, env: { CROSSTALK_TEST_STORE_INDEPENDENT: '1' }, ...pgFileDatabases } },
          { extends: true, test: { name: 'sqlite', include: ALL, exclude: once } },
        ],
  },
});
