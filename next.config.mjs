// Next.js config: native and server-only packages stay out of the bundle; framing headers on every response.

// Plain ESM, not next.config.ts: Next compiles a TypeScript config with SWC at every start, which maps SWC's native
// binding (24 MB of RSS, a tokio thread) into the production server for the life of the process (issue 24.5:
// RSS after the load; lib/security/next-config.test.ts checks it stays out). It cannot import lib/security/headers.ts
// (TypeScript) either: these must equal its FRAME_HEADERS (next-config.test.ts).
const FRAME_HEADERS = { 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' };

/** @type {import('next').NextConfig} */
const nextConfig = {
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
