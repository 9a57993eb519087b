// The built-in channels' ids: what `config.channels` may name (the start refuses any other), without loading the plugins.
export const CHANNEL_IDS = ['webchat', 'webhook', 'slack', 'discord', 'telegram', 'matrix', 'msteams', 'mattermost', 'bluebubbles', 'nextcloud-talk', 'zalo', 'zalouser', 'nostr', 'tlon', 'voice'] as const;
