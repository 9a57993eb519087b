// vitest setup file of the PostgreSQL pass (vitest.config.mts): points TEST_DATABASE_URL at this worker's own database.
// Runs in the worker before each test file is loaded; every test reads TEST_DATABASE_URL from the environment, and the
// child processes they start inherit it. The base URL is kept in CROSSTALK_TEST_BASE_DATABASE_URL.
import { DEFAULT_TEST_DATABASE_URL, ensureDatabase, workerDatabaseUrl } from './pg-worker-db';

const worker = process.env.VITEST_POOL_ID;
if (!worker) throw new Error('VITEST_POOL_ID is not set: this setup file runs only in a vitest worker');
const base = (process.env.CROSSTALK_TEST_BASE_DATABASE_URL ??= process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL);
const url = workerDatabaseUrl(base, worker);
if (process.env.TEST_DATABASE_URL !== url) {
  await ensureDatabase(base, url);
  process.env.TEST_DATABASE_URL = url;
}
