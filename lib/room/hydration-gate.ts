// Holds the live stream's cache writes until the room's deferred parts (its <Activity> boundaries) have hydrated.
//
// Those parts hydrate after the shell, at React's lowest priority, and read TanStack Query through
// useSyncExternalStore, whose server snapshot is the cache as it is *now*: a part that hydrates after an event
// changed its data renders that newer data against the server's HTML, and React throws a hydration mismatch
// (minified error #418) and renders the part again from scratch. Until every part has reported in, the stream's
// writes wait here, in order; after that (and for good) they run at once.
export class HydrationGate<Part extends string = string> {
  private readonly waiting: Set<Part>;
  private queue: Array<() => void> = [];

  constructor(parts: readonly Part[]) {
    this.waiting = new Set(parts);
  }

  get open(): boolean {
    return this.waiting.size === 0;
  }

  /** `part` has hydrated (or mounted on the client); the last one opens the gate and runs what waited, in order. */
  hydrated(part: Part): void {
    if (!this.waiting.delete(part) || !this.open) return;
    const queued = this.queue;
    this.queue = [];
    for (const fn of queued) fn();
  }

  /** Runs `fn` now when the gate is open, else once it opens. */
  run(fn: () => void): void {
    if (this.open) fn();
    else this.queue.push(fn);
  }
}
