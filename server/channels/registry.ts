// Every built-in channel, made by its factory (per service, so per-channel caches such as DM rooms and tokens are not shared).
import { createBlueBubblesChannel } from './bluebubbles';
import { createDiscordChannel } from './discord';
import { createMatrixChannel } from './matrix';
import { createMattermostChannel } from './mattermost';
import { createTeamsChannel } from './msteams';
import { createNextcloudTalkChannel } from './nextcloud-talk';
import { createNostrChannel } from './nostr';
import { createSlackChannel } from './slack';
import { createTelegramChannel } from './telegram';
import { createTlonChannel } from './tlon';
import type { AnyChannelPlugin } from './types';
import { createVoiceChannel } from './voice';
import { createWebchatChannel } from './webchat';
import { createWebhookChannel } from './webhook';
import { createZaloChannel } from './zalo';
import { createZaloUserChannel } from './zalouser';

export function createChannelRegistry(): Map<string, AnyChannelPlugin> {
  const all: AnyChannelPlugin[] = [
    createWebchatChannel(),
    createWebhookChannel(),
    createSlackChannel(),
    createDiscordChannel(),
    createTelegramChannel(),
    createMatrixChannel(),
    createTeamsChannel(),
    createMattermostChannel(),
    createBlueBubblesChannel(),
    createNextcloudTalkChannel(),
    createZaloChannel(),
    createZaloUserChannel(),
    createNostrChannel(),
    createTlonChannel(),
    createVoiceChannel(),
  ];
  return new Map(all.map((p) => [p.id, p]));
}
