// Server work in pieces, each in a macrotask of its own: the event loop serves other work between them (the room's
// page render is otherwise one 15–35 ms task of promise continuations on the gateway's loop, issue 24.2).

/** A later macrotask (a `setImmediate` hop). */
export const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs the steps one after another, each (and what follows the last) in a later macrotask. */
export async function inTurns(steps: ReadonlyArray<() => unknown>): Promise<void> {
  for (const step of steps) {
    await nextTask();
    await step();
  }
  await nextTask();
}
