import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createHoldQueue } from './hold-queue.js'

/** A clock and timers stepped by hand: `advance` fires every timer due by then, in order. */
function manualTime() {
  let now = 0
  const pending: Array<{ at: number; callback: () => void }> = []
  return {
    now: () => now,
    timers: {
      setTimeout(callback: () => void, ms: number) {
        pending.push({ at: now + ms, callback })
        return pending.length
      },
    },
    get scheduled() {
      return pending.length
    },
    async advance(ms: number) {
      now += ms
      pending.sort((a, b) => a.at - b.at)
      while (pending.length > 0 && pending[0]!.at <= now) pending.shift()!.callback()
      // Let the resolved holds' continuations run.
      await new Promise((resolve) => setImmediate(resolve))
    },
  }
}

describe('hold queue', () => {
  it('ends holds that fall within one slot together, on one timer', async () => {
    const time = manualTime()
    const queue = createHoldQueue({ now: time.now, timers: time.timers, slotMs: 10 })
    const ended: number[] = []
    for (const ms of [21, 25, 30]) void queue.hold(ms).then(() => ended.push(ms))
    expect(time.scheduled).toBe(1)
    expect(queue.size).toBe(3)
    await time.advance(29)
    expect(ended).toEqual([])
    await time.advance(1)
    expect(ended).toEqual([21, 25, 30])
    expect(queue.size).toBe(0)
  })

  it('gives holds ending in different slots timers of their own', async () => {
    const time = manualTime()
    const queue = createHoldQueue({ now: time.now, timers: time.timers, slotMs: 10 })
    const ended: number[] = []
    void queue.hold(5).then(() => ended.push(5))
    void queue.hold(15).then(() => ended.push(15))
    expect(time.scheduled).toBe(2)
    await time.advance(10)
    expect(ended).toEqual([5])
    await time.advance(10)
    expect(ended).toEqual([5, 15])
  })

  it('never ends a hold early, nor later than one slot after it was due', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 0, max: 500 }), fc.integer({ min: 1, max: 50 }), async (start, ms, slotMs) => {
        const time = manualTime()
        await time.advance(start)
        const queue = createHoldQueue({ now: time.now, timers: time.timers, slotMs })
        let endedAt: number | undefined
        void queue.hold(ms).then(() => (endedAt = time.now()))
        for (let step = 0; step < ms + slotMs + 1 && endedAt === undefined; step++) await time.advance(1)
        expect(endedAt).toBeDefined()
        expect(endedAt! - start).toBeGreaterThanOrEqual(ms)
        expect(endedAt! - start).toBeLessThanOrEqual(ms + slotMs)
      }),
      { numRuns: 40 },
    )
  })
})
