// exec: runs a shell command in the agent's workspace folder, output capped; the canonical approval case.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { toolError } from '../errors';
import type { ToolDef } from './types';
import { described } from './describe';

const OUTPUT_CAP = 64 * 1024;

const input = described(
  z.object({
    command: z.string().min(1).max(16_384),
    cwd: z.string().max(4096).optional(),
    timeoutSeconds: z.number().min(1).max(3600).optional(),
  }),
  {
    command: 'The shell command line to run (sh -c), e.g. "ls -la".',
    cwd: 'Folder to run in, relative to your workspace folder; must stay inside it. Default: the workspace (or the delegate\'s cwd).',
    timeoutSeconds: 'Kill the command after this many seconds (1-3600). Default 60.',
  },
);

export function createExecTool(): ToolDef<z.infer<typeof input>> {
  return {
    name: 'exec',
    description:
      'Run a shell command in your workspace folder. Returns {status, exitCode, stdout, stderr}; output is capped at 64 KiB per stream. Needs approval by default.',
    inputSchema: input,
    async execute({ command, cwd, timeoutSeconds }, ctx) {
      const root = ctx.agent.workspace;
      fs.mkdirSync(/* turbopackIgnore: true */ root, { recursive: true });
      // A delegate started with a `cwd` works there by default; an explicit cwd is relative to that.
      const base = path.resolve(/* turbopackIgnore: true */ root, ctx.sessionCwd ?? '.');
      const dir = path.resolve(/* turbopackIgnore: true */ base, cwd ?? '.');
      const inside = (d: string) => d === root || d.startsWith(root + path.sep);
      if (!inside(base) || !inside(dir)) return toolError('forbidden', 'cwd must stay inside the workspace');
      if (!cwd && ctx.sessionCwd) fs.mkdirSync(/* turbopackIgnore: true */ base, { recursive: true });
      if (!fs.existsSync(/* turbopackIgnore: true */ dir)) return toolError('invalid_request', `cwd ${cwd} does not exist`);
      return new Promise((resolve) => {
        const child = spawn('/bin/sh', ['-c', command], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
        let stdout = '';
        let stderr = '';
        let truncated = false;
        const take = (acc: string, chunk: Buffer) => {
          if (acc.length >= OUTPUT_CAP) {
            truncated = true;
            return acc;
          }
          const s = acc + chunk.toString('utf8');
          if (s.length > OUTPUT_CAP) truncated = true;
          return s.slice(0, OUTPUT_CAP);
        };
        child.stdout.on('data', (c: Buffer) => (stdout = take(stdout, c)));
        child.stderr.on('data', (c: Buffer) => (stderr = take(stderr, c)));
        let timedOut = false;
        const kill = () => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            /* already gone */
          }
        };
        const timer = setTimeout(() => {
          timedOut = true;
          kill();
        }, (timeoutSeconds ?? 120) * 1000);
        const onAbort = () => kill();
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        child.on('error', (e) => {
          clearTimeout(timer);
          resolve(toolError('internal', `exec failed: ${e.message}`));
        });
        child.on('close', (code, sig) => {
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', onAbort);
          if (timedOut) return resolve(toolError('timeout', `command timed out after ${timeoutSeconds ?? 120}s`));
          if (ctx.signal.aborted) return resolve(toolError('internal', 'run interrupted'));
          resolve({ status: 'ok', exitCode: code ?? (sig ? 128 : 1), stdout, stderr, ...(truncated ? { truncated: true } : {}) });
        });
      });
    },
  };
}
