// loopWindows: the probe's files read back, by time, with the launcher's own file left out when another is there.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loopWindows } from './loop-windows';

describe('loopWindows', () => {
  it('reads every process file of the probe, keeps the windows in [from, to], and leaves out the launcher when the server wrote too', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-windows-'));
    const probe = path.join(dir, 'loop-probe');
    fs.writeFileSync(`${probe}.10`, '{"t":100,"max":3}\n{"t":200,"max":40}\n');
    fs.writeFileSync(`${probe}.11`, '{"t":150,"max":7}\n{"t":300,"max":9}\n');
    fs.writeFileSync(path.join(dir, 'other.12'), '{"t":150,"max":99}\n');
    expect(loopWindows(probe).map((w) => w.max).sort((a, b) => a - b)).toEqual([3, 7, 9, 40]);
    expect(loopWindows(probe, { from: 150, to: 250 }).map((w) => w.max).sort((a, b) => a - b)).toEqual([7, 40]);
    expect(loopWindows(probe, { exceptPid: 10 }).map((w) => w.max)).toEqual([7, 9]);
    fs.rmSync(`${probe}.11`);
    // The launcher's file alone: it is all there is.
    expect(loopWindows(probe, { exceptPid: 10 }).map((w) => w.max)).toEqual([3, 40]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
