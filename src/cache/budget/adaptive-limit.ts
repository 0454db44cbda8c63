/**
 * How many client-caused CMS requests may be in flight at once, and the bounded wait for a place.
 *
 * The limit follows the CMS's latency, after the gradient method of Netflix's concurrency-limits
 * and Envoy's adaptive concurrency filter: a short average of recent round trips is compared with
 * a long one; when the CMS gets slower than it usually is (it is queueing), the limit shrinks in
 * proportion, and it grows back by a fifth of a place per sample while the CMS keeps up. A failed or
 * timed-out request shrinks it by a tenth. The configured concurrency is the ceiling, 1 the floor.
 *
 * Pure of I/O: time and timers are passed in, so tests step through waits without sleeping.
 * @module
 */

import type { Timers } from '../../timers.js'

export interface ConcurrencyGateOptions {
  /** The ceiling (READ_THROUGH_CONCURRENCY). */
  readonly max: number
  /** Follow the CMS's latency (true) or hold the limit at `max`. */
  readonly adaptive: boolean
  /** Longest wait for a place (READ_THROUGH_QUEUE_TIMEOUT); 0 = refuse at once. */
  readonly queueTimeoutMs: number
  /** Most requests waiting at once; past it a request is refused at once. */
  readonly maxQueue: number
  readonly timers: Timers
}

export type GateRefusal = 'queue_full' | 'queue_timeout'

export interface Slot {
  /** Frees the place; `rttMs` and `ok` feed the limit (a timeout or 5xx is `ok: false`). */
  release(outcome: { rttMs: number; ok: boolean }): void
  /** Frees the place without a sample (the request was never sent). */
  cancel(): void
}

export type Acquired = { readonly ok: true; readonly slot: Slot } | { readonly ok: false; readonly reason: GateRefusal }

export interface ConcurrencyGate {
  acquire(): Promise<Acquired>
  /** The limit now (a whole number, at least 1). */
  readonly limit: number
  readonly inFlight: number
  readonly queued: number
}

/** Smoothing of the short and long latency averages (exponential moving averages). */
const SHORT_WEIGHT = 0.5
const LONG_WEIGHT = 0.02
/** Latency up to this multiple of the usual counts as keeping up. */
const TOLERANCE = 1.5
/** How far one sample moves the limit towards its new estimate. */
const SMOOTHING = 0.2
/** The most one sample may shrink the estimate by (halving). */
const MIN_GRADIENT = 0.5
const FAILURE_FACTOR = 0.9

/** The adaptive estimate alone, for unit tests of its arithmetic. */
export interface LimitEstimate {
  readonly limit: number
  sample(rttMs: number, ok: boolean, inFlight: number): void
}

export function createLimitEstimate(max: number): LimitEstimate {
  let limit = max
  let short: number | undefined
  let long: number | undefined
  return {
    get limit() {
      return limit
    },
    sample(rttMs, ok, inFlight) {
      if (!ok) {
        limit = Math.max(1, limit * FAILURE_FACTOR)
        return
      }
      const rtt = Math.max(rttMs, 0.001)
      short = short === undefined ? rtt : short + (rtt - short) * SHORT_WEIGHT
      long = long === undefined ? rtt : long + (rtt - long) * LONG_WEIGHT
      // The CMS got faster again: the usual latency comes down quickly, so the limit can grow.
      if (long > 2 * short) long *= 0.95
      const gradient = Math.min(1, Math.max(MIN_GRADIENT, (TOLERANCE * long) / short))
      // Shrink in proportion to the slowdown; otherwise grow by one place, but only while the
      // places are used: an idle limit says nothing about what the CMS can take.
      const estimate = gradient < 1 ? limit * gradient : inFlight >= limit / 2 ? limit + 1 : limit
      limit = Math.min(max, Math.max(1, limit * (1 - SMOOTHING) + estimate * SMOOTHING))
    },
  }
}

export function createConcurrencyGate(options: ConcurrencyGateOptions): ConcurrencyGate {
  const estimate = createLimitEstimate(options.max)
  let inFlight = 0
  const waiting: Array<{ grant: () => void }> = []
  const limitNow = () => (options.adaptive ? Math.max(1, Math.floor(estimate.limit)) : options.max)

  function slot(): Slot {
    const startedWith = inFlight
    let done = false
    const free = () => {
      if (done) return false
      done = true
      inFlight--
      return true
    }
    return {
      release({ rttMs, ok }) {
        if (!free()) return
        if (options.adaptive) estimate.sample(rttMs, ok, startedWith)
        wake()
      },
      cancel() {
        if (free()) wake()
      },
    }
  }

  function wake(): void {
    while (waiting.length > 0 && inFlight < limitNow()) {
      inFlight++
      waiting.shift()!.grant()
    }
  }

  return {
    acquire() {
      if (inFlight < limitNow() && waiting.length === 0) {
        inFlight++
        return Promise.resolve({ ok: true, slot: slot() })
      }
      if (options.queueTimeoutMs <= 0 || waiting.length >= options.maxQueue) return Promise.resolve({ ok: false, reason: 'queue_full' })
      return new Promise<Acquired>((resolve) => {
        const waiter = {
          grant: () => {
            options.timers.clearTimeout(timer)
            resolve({ ok: true, slot: slot() })
          },
        }
        const timer = options.timers.setTimeout(() => {
          const at = waiting.indexOf(waiter)
          if (at >= 0) waiting.splice(at, 1)
          resolve({ ok: false, reason: 'queue_timeout' })
        }, options.queueTimeoutMs)
        waiting.push(waiter)
      })
    },
    get limit() {
      return limitNow()
    },
    get inFlight() {
      return inFlight
    },
    get queued() {
      return waiting.length
    },
  }
}
