import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLocalBuckets, fullAfterMs, giveBack, take, type BucketState } from './token-bucket.js'

const limits = { ratePerSecond: 10, burst: 20 }

describe('token bucket', () => {
  it('starts full: the burst passes at once, the next request waits for a tenth of a second', () => {
    let state: BucketState | undefined
    for (let i = 0; i < 20; i++) {
      const result = take(state, limits, 1_000)
      expect(result.ok).toBe(true)
      state = result.state
    }
    const refused = take(state, limits, 1_000)
    expect(refused).toMatchObject({ ok: false, retryAfterMs: 100 })
    expect(take(refused.state, limits, 1_099).ok).toBe(false)
    expect(take(refused.state, limits, 1_100).ok).toBe(true)
  })

  it('refills at the rate and never above the burst', () => {
    const empty = { tokens: 0, at: 0 }
    expect(take(empty, limits, 250).state.tokens).toBeCloseTo(1.5)
    expect(take(empty, limits, 60_000).state.tokens).toBe(19)
    expect(fullAfterMs(empty, limits)).toBe(2_000)
  })

  it('mints nothing for a clock that went backwards', () => {
    const state = { tokens: 0.5, at: 10_000 }
    const result = take(state, limits, 5_000)
    expect(result.ok).toBe(false)
    expect(result.state).toEqual({ tokens: 0.5, at: 10_000 })
  })

  it('a token given back is there for the next request, up to the burst', () => {
    const after = giveBack({ tokens: 0, at: 0 }, limits, 0)
    expect(take(after, limits, 0).ok).toBe(true)
    expect(giveBack({ tokens: 20, at: 0 }, limits, 0).tokens).toBe(20)
  })

  it('grants at most rate × window + burst in any window, however requests are spaced', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 400 }),
        (ratePerSecond, burst, gaps) => {
          const bucketLimits = { ratePerSecond, burst }
          let state: BucketState | undefined
          let now = 0
          const granted: number[] = []
          for (const gap of gaps) {
            now += gap
            const result = take(state, bucketLimits, now)
            state = result.state
            if (result.ok) granted.push(now)
          }
          // Every window that starts at a grant: the grants in it fit the bound.
          for (let i = 0; i < granted.length; i++) {
            for (let j = i; j < granted.length; j++) {
              const windowMs = granted[j]! - granted[i]!
              expect(j - i + 1).toBeLessThanOrEqual(Math.floor((ratePerSecond * windowMs) / 1000 + burst + 1e-9))
            }
          }
        },
      ),
      { numRuns: 200 },
    )
  })

  it('a refusal names the wait after which the same request is granted', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.999, noNaN: true }), fc.integer({ min: 1, max: 100 }), (tokens, ratePerSecond) => {
        const bucketLimits = { ratePerSecond, burst: 5 }
        const refused = take({ tokens, at: 0 }, bucketLimits, 0)
        expect(refused.ok).toBe(false)
        expect(take(refused.state, bucketLimits, refused.retryAfterMs).ok).toBe(true)
      }),
    )
  })
})

describe('local buckets', () => {
  it('keeps one bucket per key, and forgets the least recently used past its size', () => {
    let now = 0
    const buckets = createLocalBuckets({ ratePerSecond: 1, burst: 1 }, () => now, 2)
    expect(buckets.take('a').ok).toBe(true)
    expect(buckets.take('a').ok).toBe(false)
    expect(buckets.take('b').ok).toBe(true)
    expect(buckets.take('c').ok).toBe(true)
    expect(buckets.size).toBe(2)
    // 'a' was the least recent: forgotten, so it starts full again.
    expect(buckets.take('a').ok).toBe(true)
    now = 1_000
    expect(buckets.tokens('c')).toBe(1)
  })
})
