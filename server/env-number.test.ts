// The environment's numeric settings and CROSSTALK_LOG_LEVEL: one rule, checked at start (config resolution and npm start's first lines).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';
import { ENV_NUMBERS, envInt, envNumber } from './env-number.mjs';
import { shutdownGraceMs } from './shutdown';

const root = path.resolve(import.meta.dirname, '..');
const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'ct-envnum-'));
/** loadConfig on the defaults (no config file) with these variables set. */
const load = (vars: Record<string, string>) => loadConfig({ CROSSTALK_CONFIG: undefined, CROSSTALK_DATA_DIR: dataDir(), ...vars });

describe('numeric environment variables', () => {
  it('envInt: unset or empty is the default; anything but an integer within the bounds throws naming the variable', () => {
    expect(envInt({}, 'X', 7)).toBe(7);
    expect(envInt({ X: '' }, 'X', 7)).toBe(7);
    expect(envInt({ X: ' 12 ' }, 'X', 7, { min: 1 })).toBe(12);
    expect(() => envInt({ X: 'abc' }, 'X', 7, { min: 1 })).toThrow('X must be an integer >= 1, got "abc"');
    expect(() => envInt({ X: '0' }, 'X', 7, { min: 1 })).toThrow('X must be an integer >= 1, got "0"');
    expect(() => envInt({ X: '1.5' }, 'X', 7, { min: 0, max: 9 })).toThrow('X must be an integer 0-9, got "1.5"');
    expect(() => envInt({ X: '1e400' }, 'X', 7)).toThrow('X must be an integer, got "1e400"');
  });

  it('keeps the defaults README states', () => {
    const defaults = Object.fromEntries(Object.keys(ENV_NUMBERS).map((n) => [n, envNumber(n as 'PORT', {})]));
    expect(defaults).toMatchObject({ PORT: 3000, CROSSTALK_SHUTDOWN_GRACE_MS: 3000, CROSSTALK_RETENTION_SWEEP_MS: 600_000, CROSSTALK_PG_POOL: 10, CROSSTALK_HEARTBEAT_MS: 2000, CROSSTALK_DEAD_AFTER_MS: 15_000, CROSSTALK_SWEEP_MS: 250, CROSSTALK_EVENT_RETRY_MS: 30_000, CROSSTALK_ACCEPT_RETRY_MS: 30_000, CROSSTALK_PG_IDLE_TX_MS: null });
    expect(shutdownGraceMs({})).toBe(3000);
    expect(load({}).port).toBe(3000);
  });

  it('a bad value stops the start (config resolution) with one line naming the variable and what is allowed', () => {
    const bad: Array<[string, string, RegExp]> = [
      ['CROSSTALK_SHUTDOWN_GRACE_MS', 'abc', /^CROSSTALK_SHUTDOWN_GRACE_MS must be an integer >= 0, got "abc"$/],
      ['CROSSTALK_RETENTION_SWEEP_MS', '0', /^CROSSTALK_RETENTION_SWEEP_MS must be an integer >= 1, got "0"$/],
      ['CROSSTALK_RETENTION_SWEEP_MS', 'abc', /^CROSSTALK_RETENTION_SWEEP_MS must be an integer >= 1/],
      ['CROSSTALK_PG_POOL', '-1', /^CROSSTALK_PG_POOL must be an integer 1-10000, got "-1"$/],
      ['CROSSTALK_PG_POOL', '0', /^CROSSTALK_PG_POOL must be/],
      ['CROSSTALK_PG_POOL', 'abc', /^CROSSTALK_PG_POOL must be/],
      ['CROSSTALK_DEAD_AFTER_MS', 'abc', /^CROSSTALK_DEAD_AFTER_MS must be an integer >= 1/],
      ['CROSSTALK_HEARTBEAT_MS', 'abc', /^CROSSTALK_HEARTBEAT_MS must be an integer >= 1/],
      ['CROSSTALK_SWEEP_MS', '0', /^CROSSTALK_SWEEP_MS must be an integer >= 1/],
      ['CROSSTALK_EVENT_RETRY_MS', 'soon', /^CROSSTALK_EVENT_RETRY_MS must be an integer >= 0/],
      ['CROSSTALK_ACCEPT_RETRY_MS', '-5', /^CROSSTALK_ACCEPT_RETRY_MS must be an integer >= 0/],
      ['CROSSTALK_IDEMPOTENCY_TTL_MS', 'x', /^CROSSTALK_IDEMPOTENCY_TTL_MS must be/],
      ['CROSSTALK_PAIRING_TTL_MS', 'x', /^CROSSTALK_PAIRING_TTL_MS must be/],
      ['CROSSTALK_PG_IDLE_TX_MS', 'x', /^CROSSTALK_PG_IDLE_TX_MS must be/],
      ['CROSSTALK_JOBS_SUPERVISE_S', '0', /^CROSSTALK_JOBS_SUPERVISE_S must be/],
      ['CROSSTALK_SQLITE_TURN_MS', 'x', /^CROSSTALK_SQLITE_TURN_MS must be/],
      ['CROSSTALK_WARM_ROOM_MS', 'x', /^CROSSTALK_WARM_ROOM_MS must be an integer, got "x"$/],
      ['PORT', '70000', /^PORT must be an integer 0-65535, got "70000"$/],
      ['PORT', 'abc', /^PORT must be an integer 0-65535/],
      ['PORT', '1.5', /^PORT must be an integer 0-65535/],
      ['PORT', '-1', /^PORT must be an integer 0-65535/],
    ];
    for (const [name, value, message] of bad) expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(message);
    // Empty is unset.
    expect(load({ PORT: '', CROSSTALK_SHUTDOWN_GRACE_MS: '', CROSSTALK_PG_POOL: '' }).port).toBe(3000);
    expect(load({ PORT: '0' }).port).toBe(0);
  });

  it('CROSSTALK_LOG_LEVEL must be one of pino\'s levels (before: pino\'s stack trace)', () => {
    expect(() => load({ CROSSTALK_LOG_LEVEL: 'verbose' })).toThrow(/^CROSSTALK_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"$/);
    expect(() => load({ CROSSTALK_LOG_LEVEL: 'debug' })).not.toThrow();
    expect(() => load({ CROSSTALK_LOG_LEVEL: '' })).not.toThrow();
  });

  it('an empty CROSSTALK_DATA_DIR is unset (./data), not the start directory', () => {
    const c = loadConfig({ CROSSTALK_CONFIG: undefined, CROSSTALK_DATA_DIR: '' });
    expect(c.dataDir).toBe(path.resolve(process.cwd(), 'data'));
  });

  it('npm start refuses a bad value before anything else, with one line (before: a NaN backstop timer, exit 1 ms after SIGTERM)', () => {
    // scripts/start.mjs in a copy of the tree without node_modules: past its checks it would stop at "node_modules is missing".
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-envnum-start-'));
    fs.mkdirSync(path.join(copy, 'scripts'));
    fs.mkdirSync(path.join(copy, 'server'));
    for (const f of ['start.mjs', 'require-node.mjs', 'secrets.mjs', 'static-assets.mjs', 'pages.mjs', 'thread-priority.mjs']) fs.copyFileSync(path.join(root, 'scripts', f), path.join(copy, 'scripts', f));
    fs.copyFileSync(path.join(root, 'server', 'env-number.mjs'), path.join(copy, 'server', 'env-number.mjs'));
    const start = (vars: Record<string, string>) => spawnSync(process.execPath, [path.join(copy, 'scripts', 'start.mjs')], { cwd: copy, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...vars } as unknown as NodeJS.ProcessEnv });
    for (const [name, value, message] of [
      ['CROSSTALK_SHUTDOWN_GRACE_MS', 'abc', 'crosstalk: CROSSTALK_SHUTDOWN_GRACE_MS must be an integer >= 0, got "abc"'],
      ['CROSSTALK_RETENTION_SWEEP_MS', '0', 'crosstalk: CROSSTALK_RETENTION_SWEEP_MS must be an integer >= 1, got "0"'],
      ['PORT', '1.5', 'crosstalk: PORT must be an integer 0-65535, got "1.5"'],
    ] as const) {
      const r = start({ [name]: value });
      expect(r.status, `${name}=${value}`).toBe(1);
      expect(r.stderr.trim()).toBe(message);
    }
    expect(start({ CROSSTALK_SHUTDOWN_GRACE_MS: '' }).stderr).toMatch(/node_modules is missing/);
  });
});
