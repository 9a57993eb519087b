// A statement that must be planned for its own values on PostgreSQL: it starts with UNPREPARED and runs unnamed.
/**
 * db.ts makes every parameterised statement a named prepared statement of its connection; after five runs
 * PostgreSQL may plan such a statement once for any values (a generic plan). For a statement whose best plan depends
 * on its values — sessions.search's id-range steps over `tsv @@ q`, where a rare word wants the GIN index and a
 * common one a short walk down the primary key — the generic plan walked the primary key over every row in range
 * for every word: 13–20 s a search at 10,000,000 messages instead of 13–170 ms (bench/profile-loop.ts postgres).
 * A statement whose text starts with this comment is sent unnamed: planned anew, with its values, every time.
 */
export const UNPREPARED = '/* unprepared */';
