// vitest global setup of the PostgreSQL pass (vitest.config.mts): names this run's test file databases (pg-test-db.ts)
// and drops what is left of them at the run's end, and the unused ones of earlier runs that ended without dropping.
import type { TestProject } from 'vitest/node';
import { DEFAULT_TEST_DATABASE_URL, databaseName, dropDatabase, listDatabases, runDatabasePattern } from './pg-test-db';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run tag in the PostgreSQL pass's test file databases, `r<pid of the vitest process>`. */
    crosstalkPgRun: string;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const base = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  const baseDb = databaseName(base);
  const run = `r${process.pid}`;
  project.provide('crosstalkPgRun', run);
  // Earlier runs' leftovers (a run killed before its end): only those of runs no longer alive here, and only if unused.
  for (const name of await listDatabases(base, runDatabasePattern(baseDb))) {
    const pid = Number(/_r([0-9]+)_/.exec(name)![1]);
    if (pid !== process.pid && !alive(pid)) await dropDatabase(base, name).catch(() => undefined);
  }
  return async () => {
    for (const name of await listDatabases(base, runDatabasePattern(baseDb, run))) await dropDatabase(base, name, { force: true });
  };
}
