// How the store's statements are planned on PostgreSQL: no JIT, and UNPREPARED statements planned for their own values.
/**
 * db.ts makes every parameterised statement a named prepared statement of its connection; after five runs
 * PostgreSQL may plan such a statement once for any values (a generic plan). For a statement whose best plan depends
 * on its values — sessions.search's id-range steps over `tsv @@ q`, where a rare word wants the GIN index and a
 * common one a short walk down the primary key — the generic plan walked the primary key over every row in range
 * for every word: 13–20 s a search at 10,000,000 messages instead of 13–170 ms (bench/profile-loop.ts postgres).
 * A statement whose text starts with this comment is sent unnamed: planned anew, with its values, every time.
 */
export const UNPREPARED = '/* unprepared */';

/**
 * The store's connections run with JIT off. A named statement's generic plan does not know its `LIMIT $n`, so
 * PostgreSQL costs it as reading a tenth of the table: at 500,000 runs or 10,000,000 messages that passes
 * jit_above_cost (100,000) and every run of e.g. runs.board's `status = $1 order by created_at desc limit $2`
 * compiled itself first — 40 ms of LLVM emission for a 0.3 ms query (EXPLAIN ANALYZE EXECUTE on the bench:scale
 * store), on the database's CPU, which the gateway shares. Our statements are short keyed reads and writes: JIT
 * never pays for them.
 */
export const PG_JIT = 'off';
