import { describe, expect, it } from 'vitest'
import { reclaimHeap } from './reclaim-heap.js'

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
