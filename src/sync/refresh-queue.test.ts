import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createRefreshQueue } from './refresh-queue.js'
import type { RefreshRequest } from './refresh-request.js'

const request: fc.Arbitrary<RefreshRequest> = fc.record({
  ids: fc.option(fc.array(fc.integer({ min: 1, max: 30 }), { maxLength: 4 }), { nil: undefined }),
  all: fc.option(fc.boolean(), { nil: undefined }),
  listing: fc.option(fc.boolean(), { nil: undefined }),
  reason: fc.constantFrom('purge', 'webhook'),
})

describe('refresh queue', () => {
  it('takes what every request since the last take asked for, then starts empty', () => {
    fc.assert(fc.property(fc.array(request, { maxLength: 8 }), (requests) => {
      const queue = createRefreshQueue()
      for (const r of requests) queue.add(r)
      const taken = queue.take()
      expect([...taken.ids].sort((a, b) => a - b)).toEqual([...new Set(requests.flatMap((r) => r.ids ?? []))].sort((a, b) => a - b))
      expect(taken.all).toBe(requests.some((r) => r.all === true))
      expect(taken.any).toBe(requests.length > 0)
      // A request that names no page can only be served by a listing pass.
      expect(taken.listing).toBe(requests.some((r) => r.listing === true || !r.ids?.length))
      expect(queue.take()).toEqual({ ids: new Set(), all: false, any: false, listing: false })
    }))
  })

  it('gets back what a failed sync owes, beside what arrived meanwhile, without counting it as a new request', () => {
    const queue = createRefreshQueue()
    queue.add({ ids: [1], reason: 'purge' })
    const taken = queue.take()
    queue.add({ ids: [2], reason: 'purge' })
    queue.owe({ ids: taken.ids, all: true, listing: true })
    expect(queue.pending).toEqual({ ids: new Set([2, 1]), all: true, any: true, listing: true })

    const quiet = createRefreshQueue()
    quiet.owe({ ids: new Set([5]), all: false, listing: false })
    expect(quiet.pending).toEqual({ ids: new Set([5]), all: false, any: false, listing: false })
  })

  it('does not let a taken set change under the sync that took it', () => {
    const queue = createRefreshQueue()
    queue.add({ ids: [1], reason: 'purge' })
    const taken = queue.take()
    queue.add({ ids: [2], reason: 'purge' })
    expect([...taken.ids]).toEqual([1])
  })
})
