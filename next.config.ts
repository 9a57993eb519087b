// Next.js config: native and server-only packages stay out of the bundle.
import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'pg', 'pino', 'prom-client', 'kysely', '@slack/web-api', 'grammy', '@discordjs/rest', 'nostr-tools', 'ws'],
  poweredByHeader: false,
  reactStrictMode: true,
  devIndicators: false,
};

export default nextConfig;
