// The run-once list (server/testing/store-independent.ts) cannot hide a suite from the PostgreSQL pass (see there).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STORE_INDEPENDENT } from './store-independent';
import { startTestServer } from './harness';
import { StoreIndependentViolation, storeUnderTest } from './store-under-test';

const ROOT = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|mjs)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .filter((f) => !f.includes('node_modules'));
}

describe('the run-once list', () => {
  it('runs in the "once" project, where asking for the store under test throws', async () => {
    // This file is itself on the list, so vitest.config.mts must have set the guard here.
    expect(STORE_INDEPENDENT).toContain('server/testing/store-under-test.test.ts');
    expect(process.env.CROSSTALK_TEST_STORE_INDEPENDENT).toBe('1');
    expect(() => storeUnderTest()).toThrow(StoreIndependentViolation);
    // A harness server without a store of its own is on the store under test: refused before anything opens.
    await expect(startTestServer()).rejects.toThrow(StoreIndependentViolation);
  });

  it('lists only test files that exist, under server/ (the PostgreSQL pass runs server/)', () => {
    for (const f of STORE_INDEPENDENT) {
      expect(f).toMatch(/^server\/.+\.test\.ts$/);
      expect(fs.existsSync(path.join(ROOT, f)), f).toBe(true);
    }
    expect(new Set(STORE_INDEPENDENT).size).toBe(STORE_INDEPENDENT.length);
  });

  it('nothing but store-under-test.ts reads TEST_STORE, so the guard sees every use of the store under test', () => {
    const readers = ['server', 'lib', 'bin', 'stores', 'bench', 'scripts']
      .flatMap(sources)
      .filter((f) => f !== 'server/testing/store-under-test.ts' && f !== 'server/testing/store-under-test.test.ts')
      .filter((f) => /env\.TEST_STORE|env\[['"]TEST_STORE/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(readers).toEqual([]);
  });
});
