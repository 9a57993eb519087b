// Next.js start-up hook: open the store and start the orchestrator before the first request arrives.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { getRuntime } = await import('./server/runtime');
    await getRuntime();
  }
}
