// Streaming without layout shift: replies stream in after a pause, and the room's cumulative layout shift stays "good".
import { expect, test } from './fixtures';

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
