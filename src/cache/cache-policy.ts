/**
 * How long a read-through answer may be used, and how (RFC 5861 semantics applied to our own
 * cache): fresh for its TTL, then served stale while one background refresh runs, and served
 * stale while the CMS fails, each window measured from the end of freshness. Pure: the clock and
 * randomness are the caller's.
 * @module
 */

export interface ReadThroughPolicy {
  /** Freshness of a 200 or 302 (`CACHE_TTL`). */
  readonly ttlMs: number
  /** Freshness of a 400 or 404 (`CACHE_NEGATIVE_TTL`): the CMS's "no" is worth less time. */
  readonly negativeTtlMs: number
  /** RFC 5861 §3 window after freshness: serve stale, refresh in the background. */
  readonly staleWhileRevalidateMs: number
  /** RFC 5861 §4 window after freshness: serve stale when the refresh fails. */
  readonly staleIfErrorMs: number
  /** Up to this fraction of the TTL is taken off at random, so entries stored together do not expire together. */
  readonly jitter: number
}

export interface EntryTimes {
  readonly storedAt: number
  readonly freshUntil: number
  readonly revalidateUntil: number
  readonly errorUntil: number
}

export type Freshness = 'fresh' | 'stale-while-revalidate' | 'stale-if-error' | 'expired'

export function isNegative(status: number): boolean {
  return status >= 400 && status < 500
}

/** The windows of an answer stored at `storedAt`, with `random()` in [0, 1) for the jitter. */
export function entryTimes(storedAt: number, status: number, policy: ReadThroughPolicy, random: () => number): EntryTimes {
  const ttl = isNegative(status) ? policy.negativeTtlMs : policy.ttlMs
  const freshUntil = storedAt + Math.round(ttl * (1 - policy.jitter * random()))
  return {
    storedAt,
    freshUntil,
    revalidateUntil: freshUntil + policy.staleWhileRevalidateMs,
    // A "no" is not worth serving stale through an outage: the next try may well say yes.
    errorUntil: freshUntil + (isNegative(status) ? 0 : policy.staleIfErrorMs),
  }
}

export function freshness(times: EntryTimes, now: number): Freshness {
  if (now < times.freshUntil) return 'fresh'
  if (now < times.revalidateUntil) return 'stale-while-revalidate'
  if (now < times.errorUntil) return 'stale-if-error'
  return 'expired'
}

/** How long a tier must keep the entry for every window to work. */
export function retentionMs(times: EntryTimes, now: number): number {
  return Math.max(0, Math.max(times.revalidateUntil, times.errorUntil) - now)
}
