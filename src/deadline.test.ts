/**
 * The one deadline: what a caller sees when the work settles in time, late, never, or throws
 * before it starts; run on hand-driven timers so nothing here sleeps.
 */
import { describe, expect, it } from 'vitest'
import { settleWithin, TimeoutError } from './deadline.js'
import type { Timers } from './timers.js'

function handTimers() {
  const pending = new Map<number, () => void>()
  let next = 0
  const timers: Timers = {
    setTimeout(callback) {
      pending.set(++next, callback)
      return next
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  }
  const fireAll = () => {
    for (const [id, callback] of [...pending]) {
      pending.delete(id)
      callback()
    }
  }
  return { timers, pending, fireAll }
}

describe('settleWithin', () => {
  it('settles as the work does in time, and clears its timer', async () => {
    const { timers, pending } = handTimers()
    await expect(settleWithin('read', async () => 42, 10, { timers })).resolves.toBe(42)
    await expect(settleWithin('read', () => Promise.reject(new Error('refused')), 10, { timers })).rejects.toThrow('refused')
    expect(pending.size).toBe(0)
  })

  it('rejects with a TimeoutError naming the wait when the work never settles', async () => {
    const { timers, fireAll } = handTimers()
    const waiting = settleWithin('snapshot read from file:x', () => new Promise<never>(() => {}), 250, { timers })
    fireAll()
    const error = await waiting.catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(TimeoutError)
    expect(error).toMatchObject({ code: 'TIMEOUT', message: 'snapshot read from file:x did not settle within 250ms' })
  })

  it('rejects with the error the caller chose', async () => {
    const { timers, fireAll } = handTimers()
    class Mine extends TimeoutError {}
    const waiting = settleWithin('x', () => new Promise<never>(() => {}), 5, { timers, timeoutError: () => new Mine('mine') })
    fireAll()
    await expect(waiting).rejects.toBeInstanceOf(Mine)
  })

  it('turns work that throws before returning a promise into a rejection', async () => {
    const { timers } = handTimers()
    const work = (): Promise<number> => {
      throw new Error('client bug')
    }
    await expect(settleWithin('x', work, 5, { timers })).rejects.toThrow('client bug')
  })

  it('handles the late rejection of abandoned work', async () => {
    const { timers, fireAll } = handTimers()
    let fail: (error: Error) => void = () => {}
    const waiting = settleWithin('x', () => new Promise<never>((_resolve, reject) => (fail = reject)), 5, { timers })
    fireAll()
    await expect(waiting).rejects.toBeInstanceOf(TimeoutError)
    const unhandled: unknown[] = []
    const record = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', record)
    fail(new Error('answered too late'))
    await new Promise((resolve) => setImmediate(resolve))
    process.off('unhandledRejection', record)
    expect(unhandled).toEqual([])
  })
})
