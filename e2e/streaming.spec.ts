// Streaming without layout shift: replies stream in after a pause, and the room's cumulative layout shift stays "good".
import { expect, openOwnRoom, test } from './fixtures';

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

test('a slow model’s reply streams into the room delta by delta', async ({ page, freshSession, ownServer }) => {
  test.setTimeout(120_000);
  // A model that streams word by word (the OpenAI wire format from a loopback fake), on a server of this test's own.
  const { startFakeOpenAI } = await import('../server/models/testing/fake-openai-server');
  const fake = await startFakeOpenAI();
  const words = Array.from({ length: 12 }, (_, i) => `w${i}`);
  // The stream stops before w6 until the test has seen the part on screen: a loaded machine rendering late cannot
  // show the whole reply before the check (it did in a CI run that took 21 minutes).
  let resume!: () => void;
  const held = new Promise<void>((r) => (resume = r));
  fake.setHandler(() => ({ text: words.join(' '), chunkDelayMs: 250, beforeChunk: (i: number) => (i === 6 ? held : undefined) }));
  try {
    const server = await ownServer({ config: { agents: [{ id: 'main', model: 'openai:slow-stream' }] }, env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-e2e' } });
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
