import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { IDLE_RECHECK_MS, idleDelayMs, MAX_PAUSE_MS, pickDue, verifyDelayMs, walkDelayMs, WALK_SHARE } from './plan-net.js'

describe('walkDelayMs', () => {
  it('keeps the interval while the walk is cheap, and waits for its cost to pay off when it is not', () => {
    expect(walkDelayMs({ intervalMs: 60_000, costMs: 100, budget: 0.05, preempted: false })).toBe(60_000)
    expect(walkDelayMs({ intervalMs: 60_000, costMs: 50_000, budget: 0.05, preempted: false })).toBe(50_000 / (0.05 * WALK_SHARE))
  })

  it('owes a walk cut short by a refresh as soon as what it cost is paid off', () => {
    expect(walkDelayMs({ intervalMs: 60_000, costMs: 100, budget: 0.05, preempted: true })).toBe(100 / (0.05 * WALK_SHARE))
  })

  it('never pauses longer than a timer can wait, however small the budget', () => {
    expect(walkDelayMs({ intervalMs: 60_000, costMs: 280_000, budget: 1e-9, preempted: false })).toBe(MAX_PAUSE_MS)
    expect(verifyDelayMs(120, 1e-9)).toBe(MAX_PAUSE_MS)
    expect(MAX_PAUSE_MS).toBeLessThan(2 ** 31 - 1)
  })

  it('never lets the walk use more than its share of the budget, whatever it costs', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1_000, max: 3_600_000 }), fc.double({ min: 0, max: 1e7, noNaN: true }), fc.double({ min: 0.001, max: 1, noNaN: true }), fc.boolean(),
      (intervalMs, costMs, budget, preempted) => {
        const delay = walkDelayMs({ intervalMs, costMs, budget, preempted })
        expect(Math.min(costMs, MAX_PAUSE_MS * budget * WALK_SHARE)).toBeLessThanOrEqual(delay * budget * WALK_SHARE * (1 + 1e-9))
      },
    ))
  })
})

describe('verifyDelayMs', () => {
  it('spends the other share of the budget', () => {
    expect(verifyDelayMs(120, 0.05)).toBeCloseTo(120 / (0.05 * (1 - WALK_SHARE)))
  })
})

describe('pickDue', () => {
  const holdsAll = () => true

  it('picks the oldest verified pages that are due, a batch at a time', () => {
    const order: Array<[number, number]> = [[1, 0], [2, 0], [3, 10], [4, 500]]
    expect(pickDue({ order, holds: holdsAll, now: 200, cycleMs: 100, batch: 2 })).toEqual({ due: [1, 2], gone: [], nextDueAt: 200 })
    expect(pickDue({ order: order.slice(2), holds: holdsAll, now: 200, cycleMs: 100, batch: 2 })).toEqual({ due: [3], gone: [], nextDueAt: 200 })
  })

  it('says when the next page falls due when none is, and skips pages the snapshot no longer holds', () => {
    const order: Array<[number, number]> = [[9, 0], [1, 150], [2, 170]]
    expect(pickDue({ order, holds: (id) => id !== 9, now: 200, cycleMs: 100, batch: 4 })).toEqual({ due: [], gone: [9], nextDueAt: 250 })
    expect(pickDue({ order: [], holds: holdsAll, now: 200, cycleMs: 100, batch: 4 })).toEqual({ due: [], gone: [], nextDueAt: undefined })
  })

  it('never picks a page verified within the cycle, nor more than a batch, and keeps the order', () => {
    fc.assert(fc.property(
      fc.array(fc.nat(10_000), { maxLength: 50 }).map((times) => times.sort((a, b) => a - b).map((at, i) => [i, at] as [number, number])),
      fc.nat(20_000), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 8 }),
      (order, now, cycleMs, batch) => {
        const pick = pickDue({ order, holds: holdsAll, now, cycleMs, batch })
        expect(pick.due.length).toBeLessThanOrEqual(batch)
        for (const id of pick.due) expect(order[id]![1] + cycleMs).toBeLessThanOrEqual(now)
        expect(pick.due).toEqual(order.slice(0, pick.due.length).map(([id]) => id))
      },
    ))
  })
})

describe('idleDelayMs', () => {
  it('sleeps until the next page is due, looking again at least every so often', () => {
    expect(idleDelayMs(1_500, 1_000)).toBe(500)
    expect(idleDelayMs(undefined, 1_000)).toBe(IDLE_RECHECK_MS)
    expect(idleDelayMs(10_000_000, 0)).toBe(IDLE_RECHECK_MS)
  })
})
