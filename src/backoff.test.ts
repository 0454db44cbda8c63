import { describe, expect, it } from 'vitest'
import { backoffCeiling, equalJitterDelay, fullJitterDelay, retryDelay } from './backoff.js'

describe('the backoff', () => {
  it('doubles from its base up to its cap', () => {
    expect([0, 1, 2, 3, 4, 5].map((attempt) => backoffCeiling(attempt, 100, 2_000))).toEqual([100, 200, 400, 800, 1_600, 2_000])
    expect(backoffCeiling(1_000, 1_000, 60_000)).toBe(60_000)
  })

  it('full jitter spreads over the whole ceiling, equal jitter over its upper half', () => {
    expect(fullJitterDelay(2, 100, 2_000, () => 0)).toBe(0)
    expect(fullJitterDelay(2, 100, 2_000, () => 0.999)).toBe(399)
    expect(equalJitterDelay(2, 100, 2_000, () => 0)).toBe(200)
    expect(equalJitterDelay(2, 100, 2_000, () => 1)).toBe(400)
  })

  it('retries after failures from one second, capped', () => {
    expect([1, 2, 3].map((failures) => retryDelay(failures, 60_000, () => 1))).toEqual([1_000, 2_000, 4_000])
    expect(retryDelay(0, 60_000, () => 1)).toBe(1_000)
    expect(retryDelay(20, 60_000, () => 0)).toBe(30_000)
  })
})
