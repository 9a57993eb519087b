// The room browsed through a proxy a test can cut: a real dropped connection, as when the server is killed.
import { expect, TOKEN } from '../fixtures';
import { RoomPage } from '../pages/room-page';
import type { TcpProxy } from './tcp-proxy';

/**
 * Signs in and opens `session` through `proxy`, live. With `markdown` (the default) it waits for the Markdown renderer
 * (fetched when the browser is idle after going live) before returning, so a cut that follows finds no chunk loading
 * and the page holds no warning of a retried chunk load (markdown-recovery.spec.ts covers that).
 */
export async function openThroughProxy(page: RoomPage['page'], proxy: TcpProxy, session: string, o: { markdown?: boolean } = {}): Promise<RoomPage> {
  const room = new RoomPage(page);
  const origin = `http://127.0.0.1:${proxy.port}`;
  await page.goto(`${origin}/login?token=${TOKEN}`);
  await page.goto(`${origin}/?session=${encodeURIComponent(session)}`);
  await room.waitLive();
  if (o.markdown !== false) {
    await room.send('**rendered**');
    await expect(room.messages('assistant').locator('strong', { hasText: 'rendered' })).toHaveCount(1);
  }
  return room;
}
