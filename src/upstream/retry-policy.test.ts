import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BACKOFF_BASE_MS, BACKOFF_CAP_MS, backoffDelay, parseRetryAfter, statusRetryDelay } from './retry-policy.js'

const NOW = Date.parse('2026-01-01T00:00:00Z')
const now = (): number => NOW
const half = (): number => 0.5

describe('backoffDelay', () => {
  it('stays within [0, min(cap, base·2^attempt)) for every random draw', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, draw) => {
        const delay = backoffDelay(attempt, () => draw)
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThan(Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt))
      }),
    )
  })

  it('doubles its ceiling per attempt up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, half))).toEqual([50, 100, 200, 400, 800, 1000, 1000])
  })
})

describe('statusRetryDelay', () => {
  it.each([429, 502, 503, 504])('retries %i', (status) => {
    expect(statusRetryDelay(status, undefined, 0, half, now)).toBe(50)
  })

  it.each([200, 302, 400, 404, 500, 501])('returns %i as it is', (status) => {
    expect(statusRetryDelay(status, undefined, 0, half, now)).toBeUndefined()
  })

  it('waits at least a small Retry-After', () => {
    expect(statusRetryDelay(429, '1', 0, half, now)).toBe(1_000)
    expect(statusRetryDelay(503, new Date(NOW + 2_000).toUTCString(), 0, half, now)).toBe(2_000)
  })

  it('gives up on a Retry-After longer than it may wait', () => {
    expect(statusRetryDelay(429, '120', 0, half, now)).toBeUndefined()
  })
})

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP-dates, and ignores garbage', () => {
    expect(parseRetryAfter('3', now)).toBe(3_000)
    expect(parseRetryAfter(new Date(NOW - 5_000).toUTCString(), now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeUndefined()
    expect(parseRetryAfter(undefined, now)).toBeUndefined()
  })
})
