// The shape of a set of schema migrations kept in a module of its own (one per capability), joined in migrations.ts.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { DialectName } from './schema';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SerialId = (db: Kysely<any>, table: string) => ReturnType<Kysely<any>['schema']['createTable']>;

/** A capability's migrations, named `00NN_<name>`; each runs once, in any order (allowUnorderedMigrations). */
export type MigrationSet = (dialect: DialectName, serialId: SerialId) => Record<string, Migration>;
