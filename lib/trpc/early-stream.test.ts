// The page's early live stream: adopted once by the link for the same stream, its early events handed over in order.
import { describe, expect, it } from 'vitest';
import { adoptingEventSource, earlyStreamScript, earlyStreamUrl } from './early-stream';

/** A stand-in EventSource: an EventTarget the test fires events on. */
class FakeES extends EventTarget {
  static made: FakeES[] = [];
  readyState = 0;
  withCredentials = false;
  constructor(readonly url: string) {
    super();
    FakeES.made.push(this);
  }
  close() {
    this.readyState = 2;
  }
  emit(type: string, data?: string) {
    this.dispatchEvent(Object.assign(new Event(type), { data }));
  }
}

/** Runs the page's inline script against `host` as its window. */
function runScript(host: Record<string, unknown>, url: string) {
  new Function('window', 'EventSource', 'setTimeout', earlyStreamScript(url))(host, FakeES, () => 0);
}

describe('the early live stream', () => {
  const url = earlyStreamUrl('agent:main:room');

  it("is opened by the page's script and adopted by the link for the same stream, with what it got before, in order", async () => {
    FakeES.made = [];
    const host: Record<string, unknown> = { location: { href: 'http://127.0.0.1:3000/?session=agent:main:room' } };
    runScript(host, url);
    expect(FakeES.made).toHaveLength(1);
    const early = FakeES.made[0]!;
    early.emit('connected', '{}');
    early.emit('message', '"one"');
    const ES = adoptingEventSource(host, FakeES as unknown as typeof EventSource);
    // The link asks with the URL it builds itself (relative, same input).
    const es = new ES(`/api/trpc/events.onEvent?input=${encodeURIComponent('{"sessionKey":"agent:main:room"}')}`);
    const got: string[] = [];
    for (const t of ['connected', 'message']) es.addEventListener(t, (e) => got.push(`${t}:${(e as MessageEvent).data}`));
    // The kept events reach the consumer's listeners once they are all on (a microtask later), before any new one.
    expect(got).toEqual([]);
    await Promise.resolve();
    early.emit('message', '"two"');
    expect(FakeES.made).toHaveLength(1); // no second connection
    expect(got).toEqual(['connected:{}', 'message:"one"', 'message:"two"']);
    expect(es.readyState).toBe(0);
    es.close();
    expect(early.readyState).toBe(2);
    // Once only: a reconnect gets a stream of its own.
    new ES(url);
    expect(FakeES.made).toHaveLength(2);
  });

  it('is closed when the link asks for another stream first, which gets its own', () => {
    FakeES.made = [];
    const host: Record<string, unknown> = { location: { href: 'http://127.0.0.1:3000/' } };
    runScript(host, url);
    const ES = adoptingEventSource(host, FakeES as unknown as typeof EventSource);
    const other = new ES(earlyStreamUrl('agent:main:other'));
    expect(FakeES.made).toHaveLength(2);
    expect(FakeES.made[0]!.readyState).toBe(2);
    expect(other).toBe(FakeES.made[1]);
  });
});
