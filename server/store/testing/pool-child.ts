// A child process for pool-error.test.ts: opens the PostgreSQL store, prints its pool connection's backend pid, and after "go" on stdin runs one more query.
import readline from 'node:readline';
import { sql } from 'kysely';
import { openDatabase } from '../db';

const h = await openDatabase({ dataDir: process.env.CROSSTALK_DATA_DIR!, databaseUrl: process.env.TEST_DATABASE_URL!, pgSchema: process.env.CROSSTALK_TEST_PG_SCHEMA });
// max 10: this query's client goes back to the pool idle, which is where a dropped connection emits 'error' on the pool.
const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(h.db)).rows[0]!.pid;
console.log(`pid ${pid}`);
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line !== 'go') continue;
  const again = (await sql<{ n: number }>`select 41 + 1 as n`.execute(h.db)).rows[0]!.n;
  console.log(`answer ${again}`);
  await h.close();
  process.exit(0);
}
