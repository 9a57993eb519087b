// Types of scripts/static-assets.mjs (the build's /_next/static/* from memory), for the TypeScript tests.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Brotli's quality for the assets. */
export const BROTLI_QUALITY: number;
export function acceptedEncodings(header: string | undefined): Set<string>;
export function staticAssets(
  dir: string,
  options?: { headers?: Record<string, string>; maxBytes?: number },
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
