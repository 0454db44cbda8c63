import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { planNextSync, type ScheduleInput } from './plan-schedule.js'

const base: ScheduleInput = {
  result: { ok: true },
  hasSnapshot: true,
  consecutiveFailures: 0,
  refreshPending: false,
  now: 1_000,
  random: () => 0.5,
  intervalMs: 60_000,
  debounceMs: 250,
  retryMaxMs: 300_000,
  unreadyRetryMaxMs: 5_000,
}

const failure = fc.record({
  failures: fc.integer({ min: 1, max: 40 }),
  draw: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  retryAfterMs: fc.option(fc.nat(100_000_000), { nil: undefined }),
  hasSnapshot: fc.boolean(),
  retryMaxMs: fc.integer({ min: 1_000, max: 3_600_000 }),
})

describe('planNextSync', () => {
  it('under a budget, waits for the walk the pacing allows next instead of the interval, at once when it is owed', () => {
    expect(planNextSync({ ...base, walkDueAt: 500_000 })).toEqual({ kind: 'interval', delayMs: 499_000, quietUntil: 0 })
    expect(planNextSync({ ...base, walkDueAt: 0 })).toEqual({ kind: 'interval', delayMs: 0, quietUntil: 0 })
    expect(planNextSync({ ...base, walkDueAt: 500_000, refreshPending: true })).toEqual({ kind: 'refresh', delayMs: 250, quietUntil: 0 })
  })

  it('after a success: the interval, or the debounce when refresh requests came in meanwhile', () => {
    expect(planNextSync(base)).toEqual({ kind: 'interval', delayMs: 60_000, quietUntil: 0 })
    expect(planNextSync({ ...base, refreshPending: true })).toEqual({ kind: 'refresh', delayMs: 250, quietUntil: 0 })
  })

  it('after a failure: waits at least what the CMS asked (up to SYNC_RETRY_MAX), never longer than the caps allow', () => {
    fc.assert(fc.property(failure, ({ failures, draw, retryAfterMs, hasSnapshot, retryMaxMs }) => {
      const input = { ...base, result: { ok: false, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }, consecutiveFailures: failures, random: () => draw, hasSnapshot, retryMaxMs }
      const next = planNextSync(input)
      const cap = hasSnapshot ? retryMaxMs : Math.min(base.unreadyRetryMaxMs, retryMaxMs)
      expect(next.kind).toBe('interval')
      expect(next.delayMs).toBeGreaterThanOrEqual(Math.min(retryAfterMs ?? 0, retryMaxMs))
      expect(next.delayMs).toBeLessThanOrEqual(Math.max(cap, Math.min(retryAfterMs ?? 0, retryMaxMs)))
      // Quiet only when the CMS asked for it: until the retry, refresh requests do not cut it short.
      expect(next.quietUntil).toBe(retryAfterMs === undefined ? 0 : base.now + next.delayMs)
    }))
  })

  it('keeps the backoff short while there is no snapshot to serve', () => {
    const next = planNextSync({ ...base, result: { ok: false }, consecutiveFailures: 30, hasSnapshot: false, random: () => 0.999 })
    expect(next.delayMs).toBeLessThanOrEqual(5_000)
    expect(planNextSync({ ...base, result: { ok: false }, consecutiveFailures: 30, random: () => 0.999 }).delayMs).toBeGreaterThan(150_000)
  })
})
