import { describe, expect, it } from 'vitest'
import { AFTER_LOAD_DELAY_MS, createHeapReclaimer, reclaimHeap, RECLAIM_FROM_PAGES, skipReclaim } from './reclaim-heap.js'

describe('reclaimHeap', () => {
  it('collects through the in-process inspector and ends once the collection has run', async () => {
    // Garbage the collection must take back: 64 MiB of arrays no one holds.
    let garbage: number[][] | undefined = Array.from({ length: 64 }, () => new Array<number>(2 ** 17).fill(1.5))
    expect(garbage.length).toBe(64)
    garbage = undefined
    await expect(reclaimHeap()).resolves.toBe(true)
  })

  it('really collects on every Node line CI runs: what is held only weakly is gone after it', async () => {
    // reclaimHeap() is true only when a WeakRef's target did not survive the collection.
    let unheld: object | undefined = { big: new Array<number>(2 ** 16).fill(2.5) }
    const ref = new WeakRef(unheld)
    unheld = undefined
    // Out of the task that made the WeakRef, which keeps its target alive until the task ends.
    await new Promise((resolve) => setImmediate(resolve))
    await expect(reclaimHeap()).resolves.toBe(true)
    expect(ref.deref()).toBeUndefined()
  })

  it('has a public path that collects nothing', async () => {
    await expect(skipReclaim()).resolves.toBe(false)
  })

  it('can run again after a first collection (each call has its own session)', async () => {
    await expect(reclaimHeap()).resolves.toBe(true)
    await expect(reclaimHeap()).resolves.toBe(true)
  })
})

describe('createHeapReclaimer', () => {
  function recorder(fromPages?: number) {
    const lines: Array<{ details: Record<string, unknown>; message: string }> = []
    let calls = 0
    const deferred: Array<[() => void, number]> = []
    const after = createHeapReclaimer({
      defer: (run, ms) => void deferred.push([run, ms]),
      logger: { info: (details, message) => void lines.push({ details: details as Record<string, unknown>, message }) },
      reclaim: () => {
        calls++
        return Promise.resolve(true)
      },
      ...(fromPages === undefined ? {} : { fromPages }),
    })
    return { after, lines, calls: () => calls, deferred }
  }

  it('compacts once, a while after the first large snapshot loaded by a follower, and not again after its later loads or a sync', async () => {
    const { after, lines, calls, deferred } = recorder()
    after(RECLAIM_FROM_PAGES, 'loading the first snapshot', AFTER_LOAD_DELAY_MS)
    after(RECLAIM_FROM_PAGES * 10, 'the first full sync')
    // Not at once: the start's readiness is not held back by the collection.
    expect(calls()).toBe(0)
    expect(deferred.map(([, ms]) => ms)).toEqual([AFTER_LOAD_DELAY_MS])
    deferred[0]![0]()
    await new Promise((resolve) => setImmediate(resolve))
    expect(calls()).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]!.message).toBe('memory: heap compacted after loading the first snapshot')
    expect(lines[0]!.details).toMatchObject({ collected: true, rssMiB: [expect.any(Number), expect.any(Number)] })
  })

  it('leaves small trees alone, and still compacts once a large one arrives', async () => {
    const { after, lines, calls } = recorder(100)
    after(99, 'the first full sync')
    expect(calls()).toBe(0)
    after(100, 'the first full sync')
    await new Promise((resolve) => setImmediate(resolve))
    expect(calls()).toBe(1)
    expect(lines.map((line) => line.message)).toEqual(['memory: heap compacted after the first full sync'])
  })
})
