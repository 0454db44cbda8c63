import { describe, expect, it } from 'vitest'
import { isProxyError } from '../errors.js'
import { mapBounded } from './map-bounded.js'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('mapBounded', () => {
  it('keeps at most `concurrency` in flight and returns the results in the items\' order', async () => {
    let inFlight = 0
    let most = 0
    const done: number[] = []
    const results = await mapBounded([5, 1, 4, 2, 3], 2, new AbortController().signal, async (n, index) => {
      most = Math.max(most, ++inFlight)
      for (let i = 0; i < n; i++) await nextTurn()
      inFlight--
      return `${index}:${n}`
    }, (count) => done.push(count))
    expect(results).toEqual(['0:5', '1:1', '2:4', '3:2', '4:3'])
    expect(most).toBe(2)
    expect(done).toEqual([1, 2, 3, 4, 5])
  })

  it('starts nothing after the first failure, and rejects with it', async () => {
    const started: number[] = []
    const failing = mapBounded([1, 2, 3, 4, 5, 6], 2, new AbortController().signal, async (n) => {
      started.push(n)
      await nextTurn()
      if (n === 2) throw new Error('page 2 failed')
      return n
    })
    await expect(failing).rejects.toThrow('page 2 failed')
    // 1 and 2 ran side by side; 3 started when 1 finished, before 2 failed.
    expect(started).toEqual([1, 2, 3])
  })

  it('stops with SYNC_ABORTED once the signal is aborted', async () => {
    const controller = new AbortController()
    const started: number[] = []
    const run = mapBounded([1, 2, 3, 4], 1, controller.signal, async (n) => {
      started.push(n)
      if (n === 2) controller.abort()
      return n
    })
    const error = await run.catch((e: unknown) => e)
    expect(isProxyError(error, 'SYNC_ABORTED')).toBe(true)
    expect(started).toEqual([1, 2])
  })

  it('runs one worker for no items and returns nothing', async () => {
    expect(await mapBounded([], 4, new AbortController().signal, async () => 1)).toEqual([])
  })
})
