#!/usr/bin/env node
// Adds package-lock.json entries for optional platform binaries (other OSes/CPUs) that the lockfile lacks.
//
// `npm ci` (npm ≥ 11.6.2) refuses a lockfile in which a package's optionalDependencies have no entry
// ("Missing: @next/swc-darwin-arm64@… from lock file"). A lockfile written where the registry does not
// serve those binaries (this build machine's mirror answers 404 for them) lacks exactly these entries.
// The entries added here name version, os and cpu only; npm skips them on other platforms and fetches
// them by version where they apply. Run after `npm install`: `node scripts/lock-platform-entries.mjs`.
// `--check` only reports (exit 1 when entries are missing).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const lockPath = path.join(root, 'package-lock.json');
const check = process.argv.includes('--check');

// Platform suffixes of native packages (@next/swc-*, @tailwindcss/oxide-*, lightningcss-*, …).
const PLATFORMS = [
  ['darwin-arm64', ['darwin'], ['arm64']],
  ['darwin-x64', ['darwin'], ['x64']],
  ['darwin-universal', ['darwin'], ['arm64', 'x64']],
  ['win32-arm64-msvc', ['win32'], ['arm64']],
  ['win32-x64-msvc', ['win32'], ['x64']],
  ['win32-ia32-msvc', ['win32'], ['ia32']],
  ['win32-arm64', ['win32'], ['arm64']],
  ['win32-x64', ['win32'], ['x64']],
  ['android-arm64', ['android'], ['arm64']],
  ['android-arm-eabi', ['android'], ['arm']],
  ['freebsd-x64', ['freebsd'], ['x64']],
  ['freebsd-arm64', ['freebsd'], ['arm64']],
  ['linux-arm-gnueabihf', ['linux'], ['arm']],
  ['linux-arm64-gnu', ['linux'], ['arm64']],
  ['linux-arm64-musl', ['linux'], ['arm64']],
  ['linux-x64-gnu', ['linux'], ['x64']],
  ['linux-x64-musl', ['linux'], ['x64']],
  ['wasm32-wasi', null, ['wasm32']],
];

const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const pkgs = lock.packages ?? {};
const added = [];
const unknown = [];
for (const [where, entry] of Object.entries(pkgs)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = where ? `${where}/node_modules/${name}` : `node_modules/${name}`;
    const top = `node_modules/${name}`;
    if (pkgs[nested] || pkgs[top] || added.some((a) => a.key === top)) continue;
    const platform = PLATFORMS.find(([suffix]) => name.endsWith(`-${suffix}`));
    if (!platform || !/^\d+\.\d+\.\d+/.test(version)) {
      unknown.push(`${name}@${version} (optional dependency of ${where || 'the root'})`);
      continue;
    }
    const [, os, cpu] = platform;
    const value = { version, cpu, ...(entry.dev ? { dev: true } : {}), optional: true, ...(os ? { os } : {}) };
    added.push({ key: top, value });
  }
}

if (unknown.length) console.error(`cannot place (no known platform suffix or no exact version):\n  ${unknown.join('\n  ')}`);
if (!added.length) {
  console.log('package-lock.json: no optional platform entries missing');
  process.exit(unknown.length ? 1 : 0);
}
console.log(`${check ? 'missing' : 'adding'} ${added.length} entries: ${added.map((a) => `${a.key.slice('node_modules/'.length)}@${a.value.version}`).join(', ')}`);
if (check) process.exit(1);

for (const a of added) pkgs[a.key] = a.value;
// npm's own order: the root first, then paths sorted by code unit.
const sorted = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
lock.packages = sorted;
fs.writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
console.log('package-lock.json updated; `npm ci --dry-run` should now pass');
