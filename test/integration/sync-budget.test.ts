/**
 * The sync's safety net under SYNC_BUDGET against a CMS that charges (the fake's cost model): on a
 * virtual clock that each CMS request moves on by what it cost, and timers fired by hand in the
 * order they fall due, hours of the schedule run in a moment. The net stays within its budget, a
 * body-only edit no PURGE announced is found by the rolling verification and served, and a PURGE
 * is served at once while the net is paced, even with a listing walk in flight.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createCostModel, generateSite, startFakeWagtail, type CostModel, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { eventually } from '../helpers/eventually.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import type { Timers } from '../../src/timers.js'

const PAGES_PATH = '/api/v1/cms/pages/'
const HOUR = 3_600_000

/** Timers on the virtual clock, fired one at a time in the order they fall due. */
function virtualTimers(clock: { ms: number }) {
  const pending = new Map<number, { callback: () => void; dueAt: number }>()
  let next = 1
  const timers: Timers = {
    setTimeout(callback, ms) {
      const handle = next++
      pending.set(handle, { callback, dueAt: clock.ms + ms })
      return handle
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  }
  /** Moves the clock to the first timer due and fires it; waits until what it started has set its next timer. */
  async function fireNext(): Promise<void> {
    const [handle, timer] = [...pending].reduce((a, b) => (b[1].dueAt < a[1].dueAt ? b : a))
    const before = pending.size
    pending.delete(handle)
    clock.ms = Math.max(clock.ms, timer.dueAt)
    timer.callback()
    await eventually(() => pending.size >= before, 'the fired work to schedule its next turn')
  }
  const nextDueAt = () => Math.min(...[...pending.values()].map((timer) => timer.dueAt))
  return { timers, pending, fireNext, nextDueAt }
}

interface Scene {
  readonly h: Harness
  readonly origin: FakeWagtail
  readonly cost: CostModel
  readonly clock: { ms: number }
  readonly run: ReturnType<typeof virtualTimers>
  readonly pages: FakePage[]
}

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A charging CMS of `size` pages and a shield syncing it under `budget`, its first (full) sync done. */
async function scene(size: number, budget: string): Promise<Scene> {
  const clock = { ms: Date.UTC(2026, 0, 1) }
  // Each request holds a worker for its cost: on the virtual clock, the clock moves on by it.
  const cost = createCostModel({ hold: (ms) => {
    clock.ms += ms
    return Promise.resolve()
  } })
  const pages = generateSite({ pages: size, seed: 3 })
  const origin = await startFakeWagtail({ pages, cost })
  cleanups.push(() => origin.close())
  const run = virtualTimers(clock)
  const h = await startShield({
    sharedOrigin: origin,
    synced: false,
    env: { SYNC_BUDGET: budget, SYNC_INTERVAL: '60s', FULL_SYNC_INTERVAL: '1h', REFRESH_DEBOUNCE: '100ms' },
    deps: { autoSync: true, timers: run.timers, now: () => clock.ms, random: () => 0.5 },
  })
  cleanups.push(() => h.close())
  await eventually(() => h.app.shield.sync.current !== undefined && run.pending.size >= 2, 'the first sync, and the net waiting')
  cost.reset()
  return { h, origin, cost, clock, run, pages }
}

/** Fires the timers due up to `untilMs` on the virtual clock, until `done` holds; bounded in count. */
async function runUntil(s: Scene, untilMs: number, done: () => boolean = () => false): Promise<void> {
  for (let fired = 0; fired < 5_000 && s.run.nextDueAt() <= untilMs && !done(); fired++) await s.run.fireNext()
}

function bodyEdit(s: Scene, page: FakePage): string {
  const intro = `${String(page.extra?.intro)} · rev unannounced`
  s.origin.updatePage(page.id, { extra: { ...page.extra, intro } })
  return intro
}

describe('the safety net under SYNC_BUDGET', () => {
  it('spends at most its budget of CMS time over hours of walks and verification, and still reads every page within the cycle', async () => {
    const s = await scene(300, '1%')
    const started = s.clock.ms
    const version = s.h.app.shield.sync.current!.version
    await runUntil(s, started + 3 * HOUR)
    // Nothing changed at the CMS: no page was found different.
    expect(s.h.app.shield.sync.current!.version).toBe(version)
    const elapsed = s.clock.ms - started
    const busy = s.cost.busy()
    // What the net spends is paid off after it is spent: one walk and one step may be ahead.
    const walk = 1 + 300 * s.cost.rates.listItemMs + 2 * s.cost.rates.requestMs
    expect(busy.totalMs).toBeLessThanOrEqual(0.01 * elapsed + walk + 4 * (s.cost.rates.detailMs + s.cost.rates.requestMs))
    // The walk's cost binds: fewer walks than one per SYNC_INTERVAL.
    expect(busy.listingMs / walk).toBeLessThan(elapsed / 60_000)
    // Every page became due an hour in, and was read again since.
    expect(busy.detailMs / (s.cost.rates.detailMs + s.cost.rates.requestMs)).toBeGreaterThanOrEqual(300)
    const net = (await s.h.app.inject({ method: 'GET', url: '/readyz' })).json().sync.net
    expect(net).toMatchObject({ budget: 0.01 })
    expect(net.verificationAgeSeconds).toBeLessThanOrEqual(3600)
    expect(net.budgetUsed).toBeLessThanOrEqual(0.0101)
  })

  it('finds a body-only edit that no PURGE announced by the rolling verification, and serves the CMS bytes', async () => {
    const s = await scene(120, '5%')
    const page = s.pages.find((each) => each.parentId !== null && typeof each.extra?.intro === 'string')!
    const path = `${PAGES_PATH}${page.id}/`
    const intro = bodyEdit(s, page)
    const served = async () => (await s.h.get(path)).body.includes(intro)
    const verifiedAt = s.h.app.shield.sync.current!.fullSyncedAt
    let found = false
    for (let fired = 0; fired < 5_000 && !found && s.clock.ms < verifiedAt + 2 * HOUR; fired++) {
      await s.run.fireNext()
      found = await served()
    }
    expect(found).toBe(true)
    // Read again once FULL_SYNC_INTERVAL after the first sync read it, not sooner, and by no full sync.
    expect(s.clock.ms).toBeGreaterThanOrEqual(verifiedAt + HOUR)
    expect(s.h.app.shield.sync.status.lastMode).toBe('incremental')
  })

  it('serves a PURGEd edit at once while a paced walk is in flight, and owes the walk again', async () => {
    const s = await scene(600, '5%')
    const page = s.pages.find((each) => each.parentId !== null && typeof each.extra?.intro === 'string')!
    const path = `${PAGES_PATH}${page.id}/`
    // The next walk's windows after the first hang: the walk stays in flight.
    let hang = true
    let hung = 0
    s.origin.setFault((request) => {
      if (!hang || request.kind !== 'list' || !request.query.has('offset') || request.query.get('offset') === '0') return undefined
      hung++
      return { type: 'hang' }
    })
    const walkDue = [...s.run.pending.values()].some((timer) => timer.dueAt === s.clock.ms + 60_000)
    expect(walkDue).toBe(true)
    const before = s.run.pending.size
    // Fire the walk by hand (it will not end by itself).
    const [handle, timer] = [...s.run.pending].find(([, each]) => each.dueAt === s.clock.ms + 60_000)!
    s.run.pending.delete(handle)
    s.clock.ms = timer.dueAt
    timer.callback()
    await eventually(() => hung > 0, 'the walk in flight, past its first window')
    const lastWalk = s.h.app.shield.sync.net?.lastWalkEndedAt
    const intro = bodyEdit(s, page)
    const purged = await s.h.app.inject({ method: 'PURGE', url: path })
    expect(purged.statusCode).toBeLessThan(300)
    await eventually(() => !s.h.app.shield.sync.status.running && s.run.pending.size >= before, 'the walk cut short')
    hang = false
    // Within a second of the PURGE on the virtual clock: REFRESH_DEBOUNCE and the refresh's own requests.
    const purgedAt = s.clock.ms
    await runUntil(s, purgedAt + 1_000)
    expect((await s.h.get(path)).body).toContain(intro)
    expect(s.h.app.shield.sync.net?.lastWalkEndedAt).toBe(lastWalk)
    expect(s.h.app.shield.sync.status.consecutiveFailures).toBe(0)
    await runUntil(s, s.clock.ms + HOUR, () => s.h.app.shield.sync.net?.lastWalkEndedAt !== lastWalk)
    expect(s.h.app.shield.sync.net?.lastWalkEndedAt).not.toBe(lastWalk)
  })
})
