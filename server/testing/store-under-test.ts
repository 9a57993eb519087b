// Which store the tests run on (TEST_STORE), read in this one place, so that the files vitest runs once refuse to ask.
//
// vitest.config.mts runs the suites listed in store-independent.ts once (project "once"), not again on PostgreSQL. Those
// files must not depend on the store under test: the "once" project sets CROSSTALK_TEST_STORE_INDEPENDENT=1, and then
// asking which store is under test (the harness does when a server is started without its own store) throws, so a
// suite that does use the store under test fails there instead of silently losing its PostgreSQL run.

export type TestStore = 'sqlite' | 'postgres';

export class StoreIndependentViolation extends Error {}

export function storeUnderTest(): TestStore {
  if (process.env.CROSSTALK_TEST_STORE_INDEPENDENT === '1') {
    throw new StoreIndependentViolation(
      'this test file is listed in STORE_INDEPENDENT (server/testing/store-independent.ts), so it runs once, never on PostgreSQL — but it uses ' +
        'the store under test (TEST_STORE, or a harness server without a store of its own). Take it off that list.',
    );
  }
  return process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
}

/** True on the PostgreSQL pass (TEST_STORE=postgres). */
export const onPostgresPass = (): boolean => storeUnderTest() === 'postgres';
