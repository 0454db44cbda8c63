import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_DIALECT, makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import { createError } from '../errors.js'
import { defersFull, fallsBackToFull, owedAfterFailure, planBuild, planSync, type SyncPlan } from './plan-sync.js'
import type { PendingRefresh } from './refresh-queue.js'

const previous = { ...makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }]), fullSyncedAt: 1_000 }
const NOTHING: PendingRefresh = { ids: new Set(), all: false, any: false, listing: false }
const HOUR = 3_600_000

const asked = fc.record({
  ids: fc.uniqueArray(fc.integer({ min: 1, max: 50 }), { maxLength: 5 }).map((ids) => new Set(ids)),
  all: fc.boolean(),
  any: fc.boolean(),
  listing: fc.boolean(),
})

describe('planSync', () => {
  it('runs a full sync when there is no snapshot, whatever was asked', () => {
    fc.assert(fc.property(asked, fc.boolean(), fc.boolean(), (pending, requestedFull, deferFull) => {
      const plan = planSync({ requestedFull, asked: pending, previous: undefined, now: 0, fullIntervalMs: HOUR, deferFull })
      expect(plan.mode).toBe('full')
    }))
  })

  it('is full exactly when asked for, asked for by a refresh, or due and not deferred', () => {
    fc.assert(fc.property(asked, fc.boolean(), fc.boolean(), fc.nat(3 * HOUR), (pending, requestedFull, deferFull, elapsed) => {
      const plan = planSync({ requestedFull, asked: pending, previous, now: previous.fullSyncedAt + elapsed, fullIntervalMs: HOUR, deferFull })
      const due = elapsed >= HOUR && !deferFull
      expect(plan.mode).toBe(requestedFull || pending.all || due ? 'full' : 'incremental')
    }))
  })

  it('carries the requests over: ids to fetch, in place only without a listing pass, refresh traffic when any arrived', () => {
    fc.assert(fc.property(asked, fc.boolean(), (pending, requestedFull) => {
      const plan = planSync({ requestedFull, asked: pending, previous, now: previous.fullSyncedAt, fullIntervalMs: HOUR, deferFull: false })
      expect(plan.requested).toBe(pending.ids)
      expect(plan.requestedFull).toBe(requestedFull)
      expect(plan.requestedListing).toBe(pending.listing)
      expect(plan.inPlace).toBe(pending.any && !pending.listing)
      expect(plan.trafficClass).toBe(pending.any ? 'refresh' : 'sync')
    }))
  })

  it('never runs a periodic full sync when FULL_SYNC_INTERVAL is off', () => {
    const plan = planSync({ requestedFull: false, asked: NOTHING, previous, now: Number.MAX_SAFE_INTEGER, fullIntervalMs: Number.POSITIVE_INFINITY, deferFull: false })
    expect(plan.mode).toBe('incremental')
  })
})

describe('planBuild', () => {
  const replaced = new Map<number, SyncedPage>()

  it('keeps the snapshot when the CMS showed it unchanged in the same dialect', () => {
    expect(planBuild({ unchanged: true }, previous, { ...DEFAULT_DIALECT }, 'incremental')).toEqual({ kind: 'keep', snapshot: previous })
    // A full sync that found nothing new keeps it too (the commit records the full check).
    expect(planBuild({ unchanged: true }, previous, DEFAULT_DIALECT, 'full').kind).toBe('keep')
  })

  it('builds when the dialect changed, even if the pages did not', () => {
    expect(planBuild({ unchanged: true }, previous, { ...DEFAULT_DIALECT, limitMax: 50 }, 'incremental')).toEqual({ kind: 'build', full: false })
  })

  it('patches pages refreshed in place into the previous snapshot', () => {
    expect(planBuild({ unchanged: false, replaced }, previous, DEFAULT_DIALECT, 'incremental')).toEqual({ kind: 'patch', previous, replaced })
  })

  it('builds, recording a full sync as such, otherwise', () => {
    expect(planBuild({ unchanged: false }, previous, DEFAULT_DIALECT, 'full')).toEqual({ kind: 'build', full: true })
    expect(planBuild({ unchanged: false }, previous, DEFAULT_DIALECT, 'incremental')).toEqual({ kind: 'build', full: false })
    expect(planBuild({ unchanged: false }, undefined, DEFAULT_DIALECT, 'full')).toEqual({ kind: 'build', full: true })
  })
})

describe('fallsBackToFull', () => {
  it('reads everything again only after an incremental build found no tree', () => {
    const inconsistent = new TreeInconsistentError(['page 2: parent 9 is missing'])
    expect(fallsBackToFull('incremental', inconsistent)).toBe(true)
    expect(fallsBackToFull('full', inconsistent)).toBe(false)
    expect(fallsBackToFull('incremental', createError('SYNC_INCONSISTENT', 'a detail changed under the listing'))).toBe(false)
    expect(fallsBackToFull('incremental', new Error('boom'))).toBe(false)
  })
})

describe('after a failure', () => {
  const plan = (over: Partial<SyncPlan> = {}): SyncPlan => ({
    mode: 'full', requestedFull: false, requested: new Set([3]), inPlace: false, requestedListing: false, trafficClass: 'sync', ...over,
  })

  it('owes the ids asked for, a full sync asked for, and a listing pass for a failed refresh in place', () => {
    fc.assert(fc.property(asked, fc.boolean(), (pending, requestedFull) => {
      const planned = planSync({ requestedFull, asked: pending, previous, now: 0, fullIntervalMs: HOUR, deferFull: false })
      const owed = owedAfterFailure(planned)
      expect([...owed.ids]).toEqual([...pending.ids])
      expect(owed.all).toBe(requestedFull)
      expect(owed.listing).toBe(pending.any || pending.listing)
    }))
  })

  it('defers the full sync only after an edit in progress, with a snapshot serving and nobody asking for full', () => {
    const failed = { plan: plan(), mode: 'full' as const, code: 'SYNC_INCONSISTENT', hasSnapshot: true, pending: { all: false } }
    expect(defersFull(failed)).toBe(true)
    expect(defersFull({ ...failed, mode: 'incremental' })).toBe(false)
    expect(defersFull({ ...failed, code: 'UPSTREAM_TIMEOUT' })).toBe(false)
    expect(defersFull({ ...failed, hasSnapshot: false })).toBe(false)
    expect(defersFull({ ...failed, plan: plan({ requestedFull: true }) })).toBe(false)
    expect(defersFull({ ...failed, pending: { all: true } })).toBe(false)
  })
})
