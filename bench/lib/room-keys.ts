// Composer keystroke latency in real Chromium (bench:room, bench:scale): keydown → the frame after React handled it.
import type { Page } from '@playwright/test';
import { sleep } from './stats';

/** Types n characters into the composer, 25 ms apart; returns each key's latency in ms, then clears the box. */
export async function keystrokes(page: Page, n: number): Promise<number[]> {
  const box = page.getByRole('textbox', { name: 'Message', exact: true });
  await box.click();
  await page.evaluate(`(() => {
    window.__keys = [];
    document.addEventListener('keydown', (e) => {
      const t0 = e.timeStamp;
      requestAnimationFrame(() => setTimeout(() => window.__keys.push(performance.now() - t0), 0));
    }, { capture: true });
  })()`);
  const text = 'the quick brown fox jumps over the lazy dog '.repeat(Math.ceil(n / 44)).slice(0, n);
  await page.keyboard.type(text, { delay: 25 });
  await sleep(300);
  const keys = (await page.evaluate('window.__keys')) as number[];
  await box.fill('');
  return keys;
}
