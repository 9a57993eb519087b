// The test suites' gateway child processes from one esbuild bundle each, built once per test run, instead of
// `node --import tsx` resolving, transforming and compiling every module at each start: a child-server start took
// 1.45 s of CPU (2.3 s, and 5.7 s to listen, under the suite's load; 54 starts in the run-once project alone) and takes
// 0.75 s bundled (BENCHMARKS.md 'Stop 46'). The vitest global setup (child-bundle-global.ts) and `npm run faults` build it and name
// its directory in CROSSTALK_TEST_BUNDLES; without that (a script run on its own) children start through tsx as before.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** Inside node_modules, so that the bundles' native packages (better-sqlite3) resolve from the project's node_modules. */
export const BUNDLE_DIR = path.join(ROOT, 'node_modules', '.cache', 'crosstalk-test');

/** The bundled entry points: name → source. */
const ENTRIES = {
  'child-server': path.join(ROOT, 'server', 'testing', 'child-server.ts'),
  'mcp-conformance-client': path.join(ROOT, 'scripts', 'mcp-conformance-client.mjs'),
} as const;
export type BundleName = keyof typeof ENTRIES;

/**
 * Builds every bundle into BUNDLE_DIR (each written beside and renamed into place: a process starting from the previous
 * one meanwhile reads a whole file) and sets CROSSTALK_TEST_BUNDLES for this process and the ones it starts.
 */
export async function buildChildBundles(): Promise<string> {
  // Loaded here, not at the top: the harness (and so the child server's own bundle) imports this module for childArgs.
  const esbuild = await import('esbuild');
  fs.mkdirSync(BUNDLE_DIR, { recursive: true });
  await Promise.all(
    Object.entries(ENTRIES).map(async ([name, entry]) => {
      const out = path.join(BUNDLE_DIR, `${name}.mjs`);
      const tmp = `${out}.${process.pid}.tmp`;
      await esbuild.build({
        entryPoints: [entry],
        outfile: tmp,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node24',
        // Native addons and the optional native drivers stay packages; tsx is what the bundle replaces.
        external: ['better-sqlite3', 'pg-native', 'tsx', 'tsx/*', 'esbuild'],
        define: { 'process.env.CROSSTALK_BUNDLED': '"1"' },
        // CommonJS packages inside an ES module bundle still find require, __filename and __dirname.
        banner: {
          js: "import { createRequire as __ctRequire } from 'node:module'; import { fileURLToPath as __ctPath } from 'node:url'; const require = __ctRequire(import.meta.url); const __filename = __ctPath(import.meta.url); const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
        },
        // Function and class names as written: packages test them (node-fetch takes a signal whose class is named AbortSignal).
        keepNames: true,
        logLevel: 'error',
      });
      fs.renameSync(tmp, out);
    }),
  );
  process.env.CROSSTALK_TEST_BUNDLES = BUNDLE_DIR;
  return BUNDLE_DIR;
}

/** The arguments after `node` that start `name`: its bundle when this run built one, else its source through tsx. */
export function childArgs(name: BundleName): string[] {
  const dir = process.env.CROSSTALK_TEST_BUNDLES;
  const bundle = dir ? path.join(dir, `${name}.mjs`) : '';
  if (bundle && fs.existsSync(bundle)) return [bundle];
  return name === 'child-server' ? ['--import', 'tsx', ENTRIES[name]] : [ENTRIES[name]];
}
