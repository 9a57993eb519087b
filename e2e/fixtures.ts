// Test fixtures: a logged-in room page object and a unique session key per test.
import { test as base } from '@playwright/test';
import { RoomPage } from './pages/room-page';

export const TOKEN = 'e2e-token';

interface Fixtures {
  room: RoomPage;
  /** A session of the default agent no other test touches. */
  freshSession: string;
}

export const test = base.extend<Fixtures>({
  room: async ({ page }, use) => {
    const room = new RoomPage(page);
    await room.login(TOKEN);
    await use(room);
  },
  freshSession: async ({}, use, testInfo) => {
    const slug = `${testInfo.title}-${Date.now().toString(36)}`.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 60);
    await use(`agent:main:e2e-${slug}`);
  },
});

export { expect } from '@playwright/test';
