// Streaming without layout shift: replies stream in after a pause, and the room's cumulative layout shift stays "good".
import { expect, openOwnRoom, type OwnServerOptions, test, TOKEN } from './fixtures';
import type { ServerProcess } from './support/server-process';
import { rpcAt } from './support/rpc';

test('no layout shift while replies stream in', async ({ room, page, freshSession }) => {
  await room.open(freshSession);
  // Seed a few rows so there is content above the streaming bubble.
  for (let i = 0; i < 3; i++) {
    await room.send(`warm ${i}`);
    await expect(room.texts('assistant').filter({ hasText: `echo: warm ${i}` })).toHaveCount(1);
  }
  await page.evaluate(() => {
    const w = window as unknown as { __cls: number; __shifts: number };
    w.__cls = 0;
    w.__shifts = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean }>) {
        if (e.hadRecentInput) continue;
        w.__cls += e.value;
        w.__shifts += 1;
      }
    }).observe({ type: 'layout-shift', buffered: false });
  });
  const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
  for (let i = 0; i < 3; i++) {
    // The pause puts the stream outside the input window that layout-shift scoring ignores.
    await room.send(`/sleep 700\n/reply streamed ${i}: ${words}`);
    await expect(room.texts('assistant').filter({ hasText: `streamed ${i}:` })).toHaveCount(1);
  }
  await page.waitForTimeout(300);
  const { cls, shifts } = await page.evaluate(() => {
    const w = window as unknown as { __cls: number; __shifts: number };
    return { cls: w.__cls, shifts: w.__shifts };
  });
  test.info().annotations.push({ type: 'layout-shift', description: `CLS ${cls.toFixed(4)} over ${shifts} shifts` });
  expect(cls).toBeLessThan(0.1);
  await room.snap('streaming-no-shift');
});

/** The reply the slow model streams word by word: w0 … w11. */
const WORDS = Array.from({ length: 12 }, (_, i) => `w${i}`);

/** A latch: `held` resolves once `open()` is called. */
function latch() {
  let open!: () => void;
  const held = new Promise<void>((r) => (open = r));
  return { held, open };
}

/** A model that streams word by word (the OpenAI wire format from a loopback fake), and a server of the test's own on it. */
async function slowModelServer(ownServer: (opts?: OwnServerOptions) => Promise<ServerProcess>) {
  const { startFakeOpenAI } = await import('../server/models/testing/fake-openai-server');
  const fake = await startFakeOpenAI();
  const server = () => ownServer({ config: { agents: [{ id: 'main', model: 'openai:slow-stream' }] }, env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-e2e' } });
  return { fake, server };
}

test('a slow model’s reply streams into the room delta by delta', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const { fake, server: start } = await slowModelServer(ownServer);
  const words = WORDS;
  // The stream stops before w6 until the test has seen the part on screen: a loaded machine rendering late cannot
  // show the whole reply before the check (it did in a CI run that took 21 minutes).
  const { held, open: resume } = latch();
  fake.setHandler(() => ({ text: words.join(' '), chunkDelayMs: 250, beforeChunk: (i: number) => (i === 6 ? held : undefined) }));
  try {
    const server = await start();
    const room = await openOwnRoom(page, server, freshSession);
    await room.send('tell me slowly');
    const pending = room.transcript.getByTestId('pending-bubble');
    // Part of the reply is on screen while the rest is still coming…
    await expect(pending).toContainText('w2');
    await expect(pending).not.toContainText('w6');
    await room.snap('streaming-partial');
    resume();
    // …then the written row replaces the bubble, whole.
    await expect(room.texts('assistant').last()).toHaveText(words.join(' '), { timeout: 20_000 });
    await expect(pending).toHaveCount(0);
  } finally {
    resume();
    // Leave the page first: a model stream cut under a running server would fail the run; the fixture stops the server.
    await page.goto('about:blank');
    await fake.close();
  }
});

test('a reply in flight is whole after a reload, and after switching to another session and back', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  const { fake, server: start } = await slowModelServer(ownServer);
  const words = WORDS;
  // The reply under test stops before w4, then before w8, until the test lets it on; any other request is answered.
  const { held: held1, open: resume1 } = latch();
  const { held: held2, open: resume2 } = latch();
  let reached8 = false;
  const beforeChunk = (i: number) => (i === 4 ? held1 : i === 8 ? ((reached8 = true), held2) : undefined);
  fake.setHandler((body) => (JSON.stringify(body.messages).includes('tell me in pieces') ? { text: words.join(' '), chunkDelayMs: 20, beforeChunk } : { text: 'elsewhere' }));
  try {
    const server = await start();
    const other = `${freshSession}-other`;
    const { runId } = await rpcAt<{ runId: string }>(page.request, server.origin, TOKEN, 'agent', { sessionKey: other, message: 'hello' });
    await rpcAt(page.request, server.origin, TOKEN, 'agent.wait', { runId });
    const room = await openOwnRoom(page, server, freshSession);
    await room.send('tell me in pieces');
    const pending = room.transcript.getByTestId('pending-bubble');
    await expect(pending).toContainText('w0 w1 w2 w3');
    // Reloaded mid-run: the words so far, not only those sent after the reload.
    await page.reload();
    await room.waitLive();
    await expect(pending).toContainText('w0 w1 w2 w3');
    // Away while w4…w7 are sent, then back: every word, none skipped.
    await room.sessionItem(other).click();
    await expect(room.sessionTitle).toHaveText(other);
    resume1();
    await expect.poll(() => reached8).toBe(true);
    await room.sessionItem(freshSession).click();
    await expect(room.sessionTitle).toHaveText(freshSession);
    await expect(pending).toContainText('w0 w1 w2 w3 w4 w5 w6 w7');
    resume2();
    await expect(room.texts('assistant').last()).toHaveText(words.join(' '), { timeout: 20_000 });
    await expect(pending).toHaveCount(0);
  } finally {
    resume1();
    resume2();
    await page.goto('about:blank');
    await fake.close();
  }
});
