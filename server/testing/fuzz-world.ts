// The server the fuzz runs against (test and bench alike): which channels are configured, with what secrets, and what the generators know of it.
import type { FuzzWorld } from './fuzz-cases';

const SECRET = 'fuzz-hook';
/** Every channel's API points at a closed loopback port: nothing the fuzz sends leaves the machine. */
const CLOSED = 'http://127.0.0.1:9';

export const fuzzConfig = {
  channels: {
    webhook: { secret: SECRET, url: `${CLOSED}/hook` },
    telegram: { botToken: 't', webhookSecret: 'tg', apiBaseUrl: CLOSED },
    slack: { botToken: 'x', signingSecret: 's', apiBaseUrl: CLOSED },
    discord: { botToken: 'x', publicKey: 'a'.repeat(64), relaySecret: 'r', apiBaseUrl: CLOSED },
  },
};

export const fuzzWorld = (token: string): FuzzWorld => ({ token, webhookSecret: SECRET, channels: Object.keys(fuzzConfig.channels), agents: ['main', 'researcher', 'writer'] });
