// The framing ban and the policy for responses that are never documents: the gateway's routes and the room's pages share them.

/** Sent on every response (next.config.mjs for what Next serves, server/http/node-routes.ts for the gateway's routes). */
export const FRAME_HEADERS = { 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' } as const;

/** For responses that are never documents (JSON, event streams): nothing may load or frame them. */
export const NON_DOCUMENT_CSP = "default-src 'none'; frame-ancestors 'none'";
