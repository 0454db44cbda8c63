import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { entryTimes, freshness, retentionMs, type ReadThroughPolicy } from './cache-policy.js'

const policy: ReadThroughPolicy = { ttlMs: 30_000, negativeTtlMs: 5_000, staleWhileRevalidateMs: 60_000, staleIfErrorMs: 3_600_000, jitter: 0.1 }

describe('read-through cache policy', () => {
  it('is fresh for the TTL, then stale-while-revalidate, then stale-if-error, then expired', () => {
    const t = entryTimes(1000, 200, policy, () => 0)
    expect(freshness(t, 1000)).toBe('fresh')
    expect(freshness(t, 30_999)).toBe('fresh')
    expect(freshness(t, 31_000)).toBe('stale-while-revalidate')
    expect(freshness(t, 90_999)).toBe('stale-while-revalidate')
    expect(freshness(t, 91_000)).toBe('stale-if-error')
    expect(freshness(t, 3_630_999)).toBe('stale-if-error')
    expect(freshness(t, 3_631_000)).toBe('expired')
  })

  it('keeps the CMS\'s 400/404 for the negative TTL and never serves them through an outage', () => {
    const t = entryTimes(0, 404, policy, () => 0)
    expect(t.freshUntil).toBe(5_000)
    expect(freshness(t, 5_000 + 60_000)).toBe('expired')
  })

  it('takes at most the jitter fraction off the TTL, never adds to it', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.9999, noNaN: true }), fc.integer({ min: 0, max: 1e12 }), (r, storedAt) => {
        const t = entryTimes(storedAt, 200, policy, () => r)
        expect(t.freshUntil - storedAt).toBeLessThanOrEqual(30_000)
        expect(t.freshUntil - storedAt).toBeGreaterThanOrEqual(27_000)
      }),
    )
  })

  it('asks a tier to keep an entry as long as its last window', () => {
    const t = entryTimes(0, 200, policy, () => 0)
    expect(retentionMs(t, 0)).toBe(30_000 + 3_600_000)
    expect(retentionMs(t, 10_000_000)).toBe(0)
  })
})
