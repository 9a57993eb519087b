// A child process for pool-error.test.ts: opens the PostgreSQL store, prints its pool connection's backend pid, and after "go" on stdin runs one more query.
// POOL_CHILD_HELD=1: the connection whose pid is printed is checked out of the pool, inside a transaction, between two statements.
import readline from 'node:readline';
import { sql } from 'kysely';
import { openDatabase } from '../db';

const h = await openDatabase({ dataDir: process.env.CROSSTALK_DATA_DIR!, databaseUrl: process.env.TEST_DATABASE_URL!, pgSchema: process.env.CROSSTALK_TEST_PG_SCHEMA });
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const go = async () => {
  for (let l = await lines.next(); !l.done; l = await lines.next()) if (l.value === 'go') return;
};
if (process.env.POOL_CHILD_HELD === '1') {
  // Checked out: the pool listens to idle clients only, so a drop here reaches no pool listener.
  const tx = h.db.transaction().execute(async (tx) => {
    const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0]!.pid;
    console.log(`pid ${pid}`);
    await go();
    await sql`select 1`.execute(tx); // the connection is gone: this fails, and the transaction with it
  });
  console.log(`transaction: ${await tx.then(() => 'committed', (e: Error) => `failed (${e.message})`)}`);
} else {
  // max 10: this query's client goes back to the pool idle, which is where a dropped connection emits 'error' on the pool.
  const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(h.db)).rows[0]!.pid;
  console.log(`pid ${pid}`);
  await go();
}
const again = (await sql<{ n: number }>`select 41 + 1 as n`.execute(h.db)).rows[0]!.n;
console.log(`answer ${again}`);
await h.close();
process.exit(0);
