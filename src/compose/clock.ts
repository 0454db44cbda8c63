/**
 * Time and chance, passed to every part so tests can replace them.
 * @module
 */
import type { Timers } from '../sync/sync-service.js'

export interface Clock {
  readonly now: () => number
  readonly random: () => number
  readonly timers: Timers
}

/** Unref'd: a pending timer never holds the process open. */
const unrefTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export function clockOf(given: Partial<Clock>): Clock {
  return { now: given.now ?? Date.now, random: given.random ?? Math.random, timers: given.timers ?? unrefTimers }
}
