/**
 * Spaces requests evenly at a fixed rate, and bounds how many are in flight, so a slow CMS is
 * never sent more than the operator allowed: a request starts only at its slot and only once a
 * place is free.
 * @module
 */

export interface Pacer {
  /** Resolves when the next request may start; call `release` when it has finished. */
  acquire(): Promise<void>
  release(): void
}

export interface Clock {
  now(): number
  sleep(ms: number): Promise<void>
}

export const realClock: Clock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}

export function pacer(ratePerSecond: number, maxInFlight: number, clock: Clock = realClock): Pacer {
  const interval = 1000 / ratePerSecond
  let nextSlot = clock.now()
  let inFlight = 0
  const waiters: (() => void)[] = []
  let queue: Promise<void> = Promise.resolve()
  const place = (): Promise<void> => {
    if (inFlight < maxInFlight) {
      inFlight++
      return Promise.resolve()
    }
    return new Promise((resolve) => waiters.push(resolve))
  }
  return {
    acquire() {
      // Chained, so callers get their slots in call order even when they ask at once.
      const turn = queue.then(async () => {
        await place()
        const wait = nextSlot - clock.now()
        if (wait > 0) await clock.sleep(wait)
        // A slot missed while waiting for a place is not made up for with a burst.
        nextSlot = Math.max(nextSlot, clock.now()) + interval
      })
      queue = turn
      return turn
    },
    release() {
      const next = waiters.shift()
      if (next) next()
      else inFlight--
    },
  }
}
