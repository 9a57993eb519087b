// Types of scripts/thread-priority.mjs (helper threads below the event loop), for the TypeScript tests.
export function helperNice(env?: Record<string, string | undefined>): number;
export function lowerHelperThreads(nice?: number): number;
export function keepHelpersLow(options?: { nice?: number; everyMs?: number }): () => void;
