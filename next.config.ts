// Next.js config: native and server-only packages stay out of the bundle; framing headers on every response.
import type { NextConfig } from 'next';
import { FRAME_HEADERS } from './lib/security/headers';

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'pg', 'pino', 'prom-client', 'kysely', '@slack/web-api', 'grammy', '@discordjs/rest', 'nostr-tools', 'ws'],
  poweredByHeader: false,
  reactStrictMode: true,
  devIndicators: false,
  // Every response, assets and API included (pages also get their CSP from proxy.ts).
  async headers() {
    return [{ source: '/:path*', headers: Object.entries(FRAME_HEADERS).map(([key, value]) => ({ key, value })) }];
  },
};

export default nextConfig;
