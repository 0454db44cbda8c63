import { describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import type { Timers } from '../timers.js'
import type { Snapshot } from '../tree/snapshot.js'
import { IDLE_RECHECK_MS, VERIFY_BATCH, WALK_SHARE } from './plan-net.js'
import type { RefreshRequest } from './refresh-request.js'
import { createSafetyNet } from './safety-net.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

const silent = { info() {}, warn() {}, debug() {} }
const HOUR = 3_600_000

/** Timers that record what was asked, fired by hand. */
function recordedTimers() {
  const pending: Array<{ callback: () => void; ms: number; cleared: boolean }> = []
  const timers: Timers = {
    setTimeout: (callback, ms) => {
      const timer = { callback, ms, cleared: false }
      pending.push(timer)
      return timer
    },
    clearTimeout: (handle) => void ((handle as { cleared: boolean }).cleared = true),
  }
  return { timers, last: () => pending.filter((timer) => !timer.cleared).at(-1) }
}

/** Six pages whose details the CMS answers as the snapshot holds them (`{"id": N}`), each costing 10 ms on the clock. */
function rig(options: { changed?: number[]; down?: boolean } = {}) {
  const clock = { ms: 0 }
  const asked: number[] = []
  const get: UpstreamGet = async (path) => {
    const id = Number(/pages\/(\d+)\//.exec(path)![1])
    asked.push(id)
    clock.ms += 10
    if (options.down) return { status: 503, contentType: 'text/html', headers: {}, text: '' }
    const answer: UpstreamAnswer = { status: 200, contentType: 'application/json', headers: {}, text: options.changed?.includes(id) ? `{"id": ${id}, "x": 1}` : `{"id": ${id}}` }
    return answer
  }
  const snapshot: Snapshot = { ...makeSnapshot([1, 2, 3, 4, 5, 6].map((id) => ({ id, parent: id === 1 ? null : 1 }))), syncedAt: 0, fullSyncedAt: 0 }
  const refreshes: RefreshRequest[] = []
  const recorded = recordedTimers()
  const net = createSafetyNet({
    budget: 0.05, cycleMs: HOUR, intervalMs: 60_000, get, pagesPath: '/api/v1/cms/pages/', rewriteUrl: createUrlRewriter({ baseUrl: 'https://shield.example' }),
    now: () => clock.ms, timers: recorded.timers, current: () => snapshot, refresh: (request) => void refreshes.push(request), logger: silent,
  })
  // Its steps are run by hand below; each sets the timer of the next.
  net.start()
  return { net, clock, asked, refreshes, recorded }
}

describe('the rolling verification', () => {
  it('reads nothing before a page is due, then a batch at a time, paced by what the batch cost', async () => {
    const { net, clock, asked, recorded } = rig()
    await net.step()
    expect(asked).toEqual([])
    expect(recorded.last()?.ms).toBe(IDLE_RECHECK_MS)
    clock.ms = HOUR
    await net.step()
    expect(asked).toEqual([1, 2, 3, 4].slice(0, VERIFY_BATCH))
    // Four reads of 10 ms, at the verification's share of a 5% budget.
    expect(recorded.last()?.ms).toBeCloseTo((VERIFY_BATCH * 10) / (0.05 * (1 - WALK_SHARE)))
    await net.step()
    expect(asked).toEqual([1, 2, 3, 4, 5, 6])
    expect(net.status).toMatchObject({ verifyCmsMs: 60, oldestVerifiedAt: HOUR + 40 })
  })

  it('refreshes a page whose detail changed unannounced, as a PURGE of it would', async () => {
    const { net, clock, refreshes } = rig({ changed: [3] })
    clock.ms = HOUR
    await net.step()
    expect(refreshes).toEqual([{ ids: [3], reason: 'verify' }])
  })

  it('after a failed read tries again later, counting what the read cost, and leaves the page due', async () => {
    const { net, clock, asked, recorded } = rig({ down: true })
    clock.ms = HOUR
    await net.step()
    expect(asked).toEqual([1])
    expect(recorded.last()?.ms).toBe(IDLE_RECHECK_MS)
    expect(net.status).toMatchObject({ verifyCmsMs: 10, oldestVerifiedAt: 0 })
  })

  it('paces the walk: the interval when its cost allows, else as long as its cost takes to pay off', () => {
    const { net, clock } = rig()
    clock.ms = 1_000
    net.walkEnded(100, false)
    expect(net.walkDueAt).toBe(61_000)
    net.walkEnded(10_000, false)
    expect(net.walkDueAt).toBe(1_000 + 10_000 / (0.05 * WALK_SHARE))
    expect(net.status).toMatchObject({ lastWalkEndedAt: 1_000, walkCmsMs: 10_100 })
  })
})
