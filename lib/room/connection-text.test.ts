// The plain sentences for failed calls and a dropped live stream, from the errors tRPC's client really makes.
import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { connectionText, errorKind, errorText, SERVER_AWAY, SERVER_GONE, SIGNED_OUT } from './connection-text';

/** As httpSubscriptionLink makes them: from a serialized-error event of the stream (the server's answer)… */
const answered = (code: number, message: string, data: Record<string, unknown>) => TRPCClientError.from({ error: { code, message, data } });
const unauthorized = answered(-32001, 'missing or wrong token', { code: 'unauthorized', httpStatus: 401, path: 'events.onEvent' });
const internal = answered(-32603, 'internal error', { code: 'internal', httpStatus: 500 });
const refused = answered(-32600, 'unknown session "x"', { code: 'invalid_request', httpStatus: 400 });
/** …and with no answer: the EventSource's error event, a failed fetch, the inactivity timeout. */
const transport = [
  TRPCClientError.from(new Event('error')),
  TRPCClientError.from(new TypeError('Failed to fetch')),
  TRPCClientError.from(new TypeError('network error')),
  new TRPCClientError('Timeout of 25000ms reached while waiting for a response'),
  new Error('Unknown error'),
  null,
  undefined,
  'Unknown error',
];

describe('connectionText', () => {
  it('says the server is not answering while the stream tries again, whatever the transport said', () => {
    expect(TRPCClientError.from(new Event('error')).message).toBe('Unknown error'); // the text the banner used to show
    for (const e of transport) {
      expect(connectionText('reconnecting', e), String(e)).toBe(SERVER_AWAY);
      expect(connectionText('connecting', e), String(e)).toBe(SERVER_AWAY);
      expect(connectionText('error', e), String(e)).toBe(SERVER_GONE);
    }
    expect(SERVER_AWAY).toBe('The server is not answering; trying again…');
  });

  it('says "signed out" for UNAUTHORIZED, however it is spelt', () => {
    expect(connectionText('error', unauthorized)).toBe(SIGNED_OUT);
    expect(connectionText('reconnecting', unauthorized)).toBe(SIGNED_OUT);
    // An HTTP 401 with no tRPC body (a proxy in front), and tRPC's own code key.
    expect(connectionText('error', new TRPCClientError('Unauthorized', { meta: { response: { status: 401 } } }))).toBe(SIGNED_OUT);
    expect(connectionText('error', { message: 'x', data: { code: 'UNAUTHORIZED' } })).toBe(SIGNED_OUT);
    expect(SIGNED_OUT).toBe('Signed out: sign in again.');
  });

  it("quotes a refusal's own message", () => {
    expect(connectionText('error', refused)).toBe('The server refused live updates: unknown session "x"');
    expect(connectionText('reconnecting', internal)).toBe('The server answered with an error (internal error); trying again…');
  });
});

describe('errorText', () => {
  it("keeps a server's message and replaces a transport's", () => {
    expect(errorText(refused)).toBe('unknown session "x"');
    expect(errorText(unauthorized)).toBe(SIGNED_OUT);
    for (const e of transport) expect(errorText(e), String(e)).toBe('the server is not answering');
  });

  it('classifies', () => {
    expect(errorKind(unauthorized)).toEqual({ kind: 'signed-out' });
    expect(errorKind(internal)).toEqual({ kind: 'refused', message: 'internal error' });
    expect(errorKind(transport[0])).toEqual({ kind: 'unreachable' });
  });
});
