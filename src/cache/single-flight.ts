/**
 * One in-flight promise per key: concurrent callers for the same key share one piece of work
 * (cf. undici's deduplicate interceptor). The entry is removed when the work settles, so a failure
 * is never remembered here.
 * @module
 */
export interface SingleFlight<T> {
  run(key: string, work: () => Promise<T>): Promise<T>
  /** Whether work for the key is in flight (a caller arriving now would join it). */
  has(key: string): boolean
  /** Keys with work in flight (for tests and metrics). */
  readonly size: number
}

export function createSingleFlight<T>(): SingleFlight<T> {
  const inFlight = new Map<string, Promise<T>>()
  return {
    run(key, work) {
      const pending = inFlight.get(key)
      if (pending) return pending
      const started = Promise.resolve()
        .then(work)
        .finally(() => inFlight.delete(key))
      inFlight.set(key, started)
      return started
    },
    has: (key) => inFlight.has(key),
    get size() {
      return inFlight.size
    },
  }
}
