// Next.js config: native and server-only packages stay out of the bundle; framing headers on every response.
import type { NextConfig } from 'next';

// No relative imports here: Next resolves them from the process's cwd, not from this file (its legacy TS config
// loader compiles this file into a module without a filename), so `npm start` / `crosstalk` run from any other
// directory failed to load the config. These must equal lib/security/headers.ts FRAME_HEADERS (next-config.test.ts).
const FRAME_HEADERS = { 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' } as const;

const nextConfig: NextConfig = {
  serverExternalPackages: ['better-sqlite3', 'pg', 'pino', 'prom-client', 'kysely', '@slack/web-api', 'grammy', '@discordjs/rest', 'nostr-tools', 'ws'],
  poweredByHeader: false,
  reactStrictMode: true,
  devIndicators: false,
  // Next loads every page and route module at start by default; crosstalk's gateway is up (instrumentation.ts) before
  // them, and the room's page, /mcp, A2A and the rest load on their first request instead (issue 24.5: start to ready).
  experimental: { preloadEntriesOnStart: false },
  // Every response, assets and API included (pages also get their CSP from proxy.ts).
  async headers() {
    return [{ source: '/:path*', headers: Object.entries(FRAME_HEADERS).map(([key, value]) => ({ key, value })) }];
  },
};

export default nextConfig;
