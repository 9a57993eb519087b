// The production start (`bootRuntime`) when its store cannot be opened: one line saying why and exit 1, never an
// uncaught exception's dump (CONTRACT §1: a start that cannot go on says so).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDataDir } from './testing/harness';

async function start(env: Record<string, string>): Promise<{ code: number | null; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', "await (await import('./server/boot.ts')).bootRuntime()"], {
    cwd: path.join(import.meta.dirname, '..'),
    env: { ...process.env, CROSSTALK_TOKEN: 'x', CROSSTALK_LOG_LEVEL: 'silent', PORT: '0', CROSSTALK_CONFIG: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  return { code, err };
}

describe('a start that cannot open its store', () => {
  it('PostgreSQL unreachable, or a data dir that is a file: one line, exit 1', async () => {
    const pg = await start({ CROSSTALK_DATA_DIR: tmpDataDir(), DATABASE_URL: 'postgres://127.0.0.1:9/crosstalk' });
    expect(pg.code).toBe(1);
    expect(pg.err).toMatch(/^crosstalk: could not start: .*ECONNREFUSED/m);
    expect(pg.err).not.toContain('triggerUncaughtException');
    const file = path.join(tmpDataDir(), 'a-file');
    fs.writeFileSync(file, '');
    const dir = await start({ CROSSTALK_DATA_DIR: file, DATABASE_URL: '' });
    expect(dir.code).toBe(1);
    expect(dir.err).toMatch(/^crosstalk: could not start: /m);
    expect(dir.err).not.toContain('    at ');
  }, 60_000);
});
