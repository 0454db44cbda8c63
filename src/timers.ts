/**
 * The one way cms-shield's long-lived parts (the sync loop, the leader lease, the read-through
 * gate, the deadlines of `deadline.ts`) set timers: passed in as a dependency, so tests fire them
 * by hand instead of sleeping.
 * A foundation module like `errors.ts`: it imports nothing, and every layer may import it.
 * @module
 */

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/**
 * Node's timers, unreferenced: a pending retry, renewal or queue deadline never keeps the
 * process alive after the server closed.
 */
export const realTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}
