// scripts/thread-priority.mjs: npm start's helper threads below its event loop in the scheduler (Linux), in a child
// process of its own (a test's worker must not lower the threads of the runner it shares a process with).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { helperNice } from '../../scripts/thread-priority.mjs';

const MODULE = pathToFileURL(path.resolve(__dirname, '../../scripts/thread-priority.mjs')).href;

// Starts a worker thread, lowers the helpers, starts a second worker under `keepHelpersLow`'s timer, and reports
// every thread's nice value with the two workers' thread ids (from /proc/thread-self inside each).
const CHILD = `
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
const { lowerHelperThreads, keepHelpersLow } = await import(process.argv[2]);
const nice = Number(process.argv[3]);
const worker = () => new Promise((resolve) => {
  const w = new Worker("const fs = require('node:fs'); const { parentPort } = require('node:worker_threads'); parentPort.postMessage(Number(fs.readlinkSync('/proc/thread-self').split('/').pop())); setInterval(() => {}, 1000);", { eval: true });
  w.once('message', (tid) => resolve({ w, tid }));
});
const nices = () => Object.fromEntries(fs.readdirSync('/proc/self/task').map((t) => [t, os.getPriority(Number(t))]));
const first = await worker();
const before = nices();
const changed = lowerHelperThreads(nice);
const after = nices();
const again = lowerHelperThreads(nice);
// A child process started from the loop's thread (as exec and stdio MCP servers are) has the loop's priority.
const child = Number(execFileSync('sh', ['-c', 'echo $(( $(cut -d")" -f2 /proc/$$/stat | cut -d" " -f18) ))'], { encoding: 'utf8' }).trim());
const stop = keepHelpersLow({ nice, everyMs: 50 });
const second = await worker();
const late0 = os.getPriority(second.tid);
await new Promise((r) => setTimeout(r, 300));
const late = os.getPriority(second.tid);
stop();
console.log(JSON.stringify({ pid: process.pid, base: os.getPriority(), first: first.tid, second: second.tid, before, changed, after, again, late0, late, child }));
process.exit(0);
`;

function run(nice: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-nice-'));
  const file = path.join(dir, 'child.mjs');
  fs.writeFileSync(file, CHILD);
  try {
    const out = execFileSync(process.execPath, [file, MODULE, String(nice)], { encoding: 'utf8', timeout: 30_000 });
    return JSON.parse(out.trim().split('\n').at(-1)!) as {
      pid: number; base: number; first: number; second: number; before: Record<string, number>; changed: number;
      after: Record<string, number>; again: number; late0: number; late: number; child: number;
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(process.platform !== 'linux')('helper threads below the event loop (scripts/thread-priority.mjs)', () => {
  it('lowers every thread but the main one, a worker thread among them, once; a thread started later is lowered by the timer', () => {
    const r = run(10);
    const target = Math.max(10, r.base);
    const helpers = Object.keys(r.after).filter((t) => Number(t) !== r.pid);
    expect(helpers.length).toBeGreaterThan(3); // V8's workers, libuv's, the worker thread
    expect(helpers.map((t) => r.after[t])).toEqual(helpers.map(() => target));
    expect(r.after[r.pid]).toBe(r.base); // the event loop keeps its priority
    expect(r.after[r.first]).toBe(target);
    expect(r.changed).toBe(Object.keys(r.before).filter((t) => Number(t) !== r.pid && r.before[t]! < 10).length);
    expect(r.changed).toBeGreaterThan(0);
    expect(r.again).toBe(0); // nothing left to change
    expect(r.late).toBe(target);
    expect(r.child).toBe(r.base);
  });

  it('with nice 0 (CROSSTALK_HELPER_NICE=0) changes nothing', () => {
    const r = run(0);
    expect(r.changed).toBe(0);
    expect(r.after).toEqual(r.before);
    expect(r.late).toBe(r.late0);
  });

  it('reads CROSSTALK_HELPER_NICE: 10 by default, 0 turns it off, at most 19', () => {
    expect(helperNice({})).toBe(10);
    expect(helperNice({ CROSSTALK_HELPER_NICE: '0' })).toBe(0);
    expect(helperNice({ CROSSTALK_HELPER_NICE: '5' })).toBe(5);
    expect(helperNice({ CROSSTALK_HELPER_NICE: '40' })).toBe(19);
    expect(helperNice({ CROSSTALK_HELPER_NICE: 'high' })).toBe(0);
  });
});
