// The server render's query client: a failed prefetch is not retried (the page's first byte would wait out the retry delay).
import { describe, expect, it } from 'vitest';
import { getQueryClient } from './query-client';

describe('getQueryClient on the server', () => {
  it('is a fresh client per call whose failed prefetch is asked once, not retried', async () => {
    const qc = getQueryClient();
    expect(getQueryClient()).not.toBe(qc);
    let calls = 0;
    await qc.prefetchQuery({
      queryKey: ['unknown-session'],
      queryFn: () => {
        calls++;
        throw new Error('unknown_session');
      },
    });
    expect(calls).toBe(1);
    expect(qc.getQueryState(['unknown-session'])?.status).toBe('error');
  });
});
