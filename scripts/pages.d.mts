// Types of scripts/pages.mjs (the room's pages in a worker thread of `npm start`), for the TypeScript tests.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The header scripts/pages.mjs puts on every request it forwards, with the key it handed its worker. */
export const PAGES_KEY_HEADER: 'x-crosstalk-pages';

export interface PagesWorker {
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly running: boolean;
  close(): Promise<number> | undefined;
}

export function pagesWorker(options: {
  root: string;
  host: string;
  port: number;
  token: string;
  defaultAgentId: string;
  /** Answers the worker's query of the room's API as JSON text (runtime.roomQuery). */
  query: (path: string, input: unknown) => Promise<string>;
  /** Called once each worker's thread runs (npm start lowers its priority: scripts/thread-priority.mjs). */
  onThread?: () => void;
  idleMs?: number;
  workerFile?: URL | string;
  log?: { log(message: string): void; error(message: string): void };
}): PagesWorker;
