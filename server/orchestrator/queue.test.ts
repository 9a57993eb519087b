// Run ids: `run_` and a UUIDv7, so ids made later sort later (the B-trees keyed by run id grow at their right edge).
import { describe, expect, it } from 'vitest';
import { newRunId, uuidv7 } from './queue';

describe('run ids', () => {
  it('are run_ and an RFC 9562 version 7 UUID whose first 48 bits are the Unix milliseconds', () => {
    const id = newRunId();
    expect(id).toMatch(/^run_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuidv7(0x0123456789ab).startsWith('01234567-89ab-7')).toBe(true);
    const before = Date.now();
    const ms = parseInt(newRunId().slice(4).replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
  });

  it('made in later milliseconds sort later, and never repeat', () => {
    const ids = Array.from({ length: 50 }, (_, i) => `run_${uuidv7(1_700_000_000_000 + i)}`);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(Array.from({ length: 10_000 }, () => newRunId())).size).toBe(10_000);
  });
});
