import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { '@': import.meta.dirname } },
  test: {
    include: ['server/**/*.test.ts', 'lib/**/*.test.ts', 'stores/**/*.test.ts', 'bin/**/*.test.ts', 'bench/lib/**/*.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
