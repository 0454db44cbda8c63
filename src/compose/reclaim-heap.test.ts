import { describe, expect, it } from 'vitest'
import { createHeapReclaimer, reclaimHeap, RECLAIM_FROM_PAGES } from './reclaim-heap.js'

describe('reclaimHeap', () => {
  it('collects through the in-process inspector and ends once the collection has run', async () => {
    // Garbage the collection must take back: 64 MiB of arrays no one holds.
    let garbage: number[][] | undefined = Array.from({ length: 64 }, () => new Array<number>(2 ** 17).fill(1.5))
    expect(garbage.length).toBe(64)
    garbage = undefined
    await expect(reclaimHeap()).resolves.toBe(true)
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
    const after = createHeapReclaimer({
      logger: { info: (details, message) => void lines.push({ details: details as Record<string, unknown>, message }) },
      reclaim: () => {
        calls++
        return Promise.resolve(true)
      },
      ...(fromPages === undefined ? {} : { fromPages }),
    })
    return { after, lines, calls: () => calls }
  }

  it('compacts once, after the first large snapshot loaded by a follower, and not again after its later loads or a sync', async () => {
    const { after, lines, calls } = recorder()
    after(RECLAIM_FROM_PAGES, 'loading the first snapshot')
    after(RECLAIM_FROM_PAGES * 10, 'the first full sync')
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
