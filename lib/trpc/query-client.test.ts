// The server render's query client: a failed prefetch is not retried (the page's first byte would wait out the retry delay).
import { describe, expect, it } from 'vitest';
import { browserRetry, getQueryClient } from './query-client';

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

describe('browserRetry', () => {
  it('retries an answer of the server once, and a request that got no answer (the server away) six times, with backoff', () => {
    const refused = { data: { code: 'invalid_request' } };
    expect([0, 1].map((n) => browserRetry(n, refused))).toEqual([true, false]);
    const noAnswer = new TypeError('Failed to fetch');
    expect([0, 5, 6].map((n) => browserRetry(n, noAnswer))).toEqual([true, true, false]);
  });
});
