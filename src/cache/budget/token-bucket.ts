/**
 * Token-bucket arithmetic (RFC 2697's single-rate bucket, without colours): a bucket holds at most
 * `burst` tokens, gains `ratePerSecond` tokens a second, and each CMS request takes one. Over any
 * window of T seconds at most `ratePerSecond × T + burst` requests pass, which is the bound
 * docs/operations.md, "The CMS budget", promises.
 *
 * Pure: the clock is an argument, so tests step through time without sleeping. The Redis script in
 * `shared-bucket.ts` runs the same arithmetic atomically for the whole cluster.
 * @module
 */
import { LRUCache } from 'lru-cache'

export interface BucketLimits {
  /** Tokens gained per second (> 0). */
  readonly ratePerSecond: number
  /** Most tokens the bucket holds: how many requests may go at once after a quiet spell. */
  readonly burst: number
}

export interface BucketState {
  readonly tokens: number
  /** Clock ms at which `tokens` was counted. */
  readonly at: number
}

export interface Take {
  readonly ok: boolean
  readonly state: BucketState
  /** When refused: ms until the bucket holds a whole token again; 0 when granted. */
  readonly retryAfterMs: number
}

/** The bucket as it stands at `now`: a bucket never seen is full; a clock that went back adds nothing. */
export function refill(state: BucketState | undefined, limits: BucketLimits, now: number): BucketState {
  if (state === undefined) return { tokens: limits.burst, at: now }
  const elapsed = Math.max(0, now - state.at)
  return { tokens: Math.min(limits.burst, state.tokens + (elapsed * limits.ratePerSecond) / 1000), at: Math.max(now, state.at) }
}

/** Takes one token when there is one. */
export function take(state: BucketState | undefined, limits: BucketLimits, now: number): Take {
  const current = refill(state, limits, now)
  if (current.tokens >= 1) return { ok: true, state: { tokens: current.tokens - 1, at: current.at }, retryAfterMs: 0 }
  return { ok: false, state: current, retryAfterMs: Math.ceil(((1 - current.tokens) * 1000) / limits.ratePerSecond) }
}

/** Gives a token back (a request that was granted and then not sent). */
export function giveBack(state: BucketState | undefined, limits: BucketLimits, now: number): BucketState {
  const current = refill(state, limits, now)
  return { tokens: Math.min(limits.burst, current.tokens + 1), at: current.at }
}

/** How long after `state` the bucket is full again: past it, the state can be forgotten. */
export function fullAfterMs(state: BucketState, limits: BucketLimits): number {
  return Math.ceil(((limits.burst - state.tokens) * 1000) / limits.ratePerSecond)
}

/**
 * A set of buckets in one process, one per key (per client, or the process's own share of the
 * CMS when Redis is out of reach). At most `maxKeys` are kept; the one forgotten first is the
 * least recently used, which costs its key at most a full bucket it may not have earned.
 */
export interface LocalBuckets {
  take(key: string): Take
  giveBack(key: string): void
  /** Tokens `key` holds now (a full bucket for a key never seen). */
  tokens(key: string): number
  readonly size: number
}

export function createLocalBuckets(limits: BucketLimits, now: () => number, maxKeys = 10_000): LocalBuckets {
  // Used is stored: `set` makes a key the most recent; reading (`peek`) does not.
  const buckets = new LRUCache<string, BucketState>({ max: maxKeys })
  return {
    take(key) {
      const result = take(buckets.peek(key), limits, now())
      buckets.set(key, result.state)
      return result
    },
    giveBack(key) {
      buckets.set(key, giveBack(buckets.peek(key), limits, now()))
    },
    tokens(key) {
      return refill(buckets.peek(key), limits, now()).tokens
    },
    get size() {
      return buckets.size
    },
  }
}
