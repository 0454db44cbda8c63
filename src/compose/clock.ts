/**
 * Time and chance, passed to every part so tests can replace them.
 * @module
 */
import { realTimers, type Timers } from '../timers.js'

export interface Clock {
  readonly now: () => number
  readonly random: () => number
  readonly timers: Timers
}

export function clockOf(given: Partial<Clock>): Clock {
  return { now: given.now ?? Date.now, random: given.random ?? Math.random, timers: given.timers ?? realTimers }
}
