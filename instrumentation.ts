// Next.js start-up hook: open the store and start the orchestrator before the first request arrives.
export async function register(): Promise<void> {
  // Not in the pages' worker (scripts/pages-worker.mjs): its process runs the one runtime.
  if (process.env.NEXT_RUNTIME === 'nodejs' && !(globalThis as Record<symbol, unknown>)[Symbol.for('crosstalk.pages')]) {
    const { getRuntime } = await import('./server/runtime');
    await getRuntime();
  }
}
