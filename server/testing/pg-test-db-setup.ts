// vitest setup file of the PostgreSQL pass (vitest.config.mts): points TEST_DATABASE_URL at a database of this test
// file's own (pg-test-db.ts), made before the file is loaded and dropped after its last hook. Every test reads
// TEST_DATABASE_URL from the environment, and the child processes they start inherit it. The base URL stays in
// CROSSTALK_TEST_BASE_DATABASE_URL.
import { afterAll, inject } from 'vitest';
import { DEFAULT_TEST_DATABASE_URL, databaseName, dropDatabase, ensureDatabase, fileDatabaseUrl } from './pg-test-db';

const base = (process.env.CROSSTALK_TEST_BASE_DATABASE_URL ??= process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL);
// Each file runs in a fresh worker process (pool "forks", isolated): its pid names the file's database within the run.
const url = fileDatabaseUrl(base, inject('crosstalkPgRun'), process.pid);
await ensureDatabase(base, url);
process.env.TEST_DATABASE_URL = url;

// Registered first, so run last (after hooks run in reverse): after the file's own afterAll hooks closed its servers.
// A database still in use (a server left open) stays for the run's end (pg-test-db-global.ts).
afterAll(async () => {
  await dropDatabase(base, databaseName(url));
});
