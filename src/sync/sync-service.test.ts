import { describe, expect, it } from 'vitest'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import { renderWagtailJson } from '../json/json-text.js'
import { syncRetryDelay } from './backoff.js'
import { createSyncService, UNREADY_RETRY_MAX_MS, type SyncServiceOptions } from './sync-service.js'
import type { Timers } from '../timers.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

const silent = { info() {}, warn() {}, debug() {} }

/** A two-page CMS answering exactly what the sync asks; `down` makes it answer 503 (with `retryAfter`, if set). */
function stubCms() {
  const state = { down: false, retryAfter: undefined as string | undefined, requests: 0, title: 'Home', paths: [] as string[] }
  const json = (status: number, body: unknown): UpstreamAnswer => ({ status, contentType: 'application/json', headers: {}, text: renderWagtailJson(body) })
  const meta = (id: number) => ({ type: 'home.HomePage', detail_url: `http://cms/api/v1/cms/pages/${id}/`, html_url: `http://site/${id}/`, slug: `p${id}`, first_published_at: null })
  const get: UpstreamGet = async (path) => {
    state.requests++
    state.paths.push(path)
    if (state.down) return { ...json(503, { message: 'down' }), headers: state.retryAfter === undefined ? {} : { 'retry-after': state.retryAfter } }
    if (path.includes('offset=1000000000')) return json(400, { message: 'limit cannot be higher than 20' })
    if (path.includes('type=&')) return json(200, { meta: { total_count: 2 }, items: [] })
    if (path.includes('title=%00')) return json(400, { message: 'field filter error. null characters are not allowed for title' })
    if (path.includes('format=api')) return json(406, { detail: 'Could not satisfy the request Accept header.' })
    if (path.includes('find/')) return { status: 302, contentType: 'text/html', headers: { location: 'http://cms/api/v1/cms/pages/1/?' }, text: '' }
    if (path.includes('offset=') || path.includes('limit=3')) {
      const items = [{ id: 1, meta: meta(1), title: state.title }, { id: 2, meta: meta(2), title: 'Child' }]
      const only = /[?&]id=(\d+)&/.exec(path)
      const shown = only ? items.filter((item) => item.id === Number(only[1])) : items
      return json(200, { meta: { total_count: shown.length }, items: shown })
    }
    const id = Number(/pages\/(\d+)\//.exec(path)![1])
    const parent = id === 1 ? null : { id: 1, meta: { type: 'home.HomePage', detail_url: 'http://cms/api/v1/cms/pages/1/', html_url: 'http://site/1/' }, title: state.title }
    return json(200, { id, meta: { ...meta(id), show_in_menus: true, seo_title: '', search_description: '', parent }, title: id === 1 ? state.title : 'Child' })
  }
  return { state, get }
}

/** Timers that only fire when the test says so. */
function manualTimers() {
  const pending: Array<{ callback: () => void; ms: number; cleared: boolean }> = []
  const timers: Timers = {
    setTimeout: (callback, ms) => {
      const timer = { callback, ms, cleared: false }
      pending.push(timer)
      return timer
    },
    clearTimeout: (handle) => void ((handle as { cleared: boolean }).cleared = true),
  }
  const next = () => pending.filter((t) => !t.cleared).at(-1)
  return { timers, next, fire: () => { const t = next()!; t.cleared = true; t.callback() } }
}

function service(cms: ReturnType<typeof stubCms>, timers: Timers, extra: Partial<SyncServiceOptions> = {}) {
  return createSyncService({
    get: cms.get,
    pagesPath: '/api/v1/cms/pages/',
    rewriteUrl: createUrlRewriter({ baseUrl: 'https://shield.example' }),
    concurrency: 2,
    intervalMs: 60_000,
    retryMaxMs: 300_000,
    logger: silent,
    now: () => 0,
    random: () => 0.5,
    timers,
    // Builds go on in microtasks only, so `settle` does not race the event loop on a busy machine.
    pause: () => Promise.resolve(),
    ...extra,
  })
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

/** A sync loop on a stub CMS and manual timers, its first sync done. */
async function started() {
  const cms = stubCms()
  const clock = manualTimers()
  const sync = service(cms, clock.timers)
  sync.start()
  await settle()
  return { cms, clock, sync }
}

describe('sync loop', () => {
  it('syncs at start, then every SYNC_INTERVAL', async () => {
    const { cms, clock, sync } = await started()
    expect(sync.current?.pages.slice().map((p) => p.id)).toEqual([1, 2])
    expect(clock.next()?.ms).toBe(60_000)
    cms.state.title = 'Home, edited'
    clock.fire()
    await settle()
    expect(sync.current?.version).toBe(2)
    expect(sync.current?.pages.at(0)!.title).toBe('Home, edited')
    await sync.stop()
    expect(clock.next()).toBeUndefined()
  })

  it('retries a failed sync with growing, jittered backoff and keeps the last snapshot', async () => {
    const { cms, clock, sync } = await started()
    cms.state.down = true
    const delays: number[] = []
    for (let i = 0; i < 4; i++) {
      clock.fire()
      await settle()
      delays.push(clock.next()!.ms)
      expect(sync.current?.version).toBe(1)
    }
    expect(delays).toEqual([1, 2, 3, 4].map((failures) => syncRetryDelay(failures, 300_000, () => 0.5)))
    expect(delays).toEqual([750, 1500, 3000, 6000])
    expect(sync.status.consecutiveFailures).toBe(4)
    cms.state.down = false
    clock.fire()
    await settle()
    expect(sync.status.consecutiveFailures).toBe(0)
    expect(clock.next()!.ms).toBe(60_000)
    await sync.stop()
  })

  it('without a snapshot to serve, retries within 5 s however long the CMS stays down; once one is served, the backoff grows to SYNC_RETRY_MAX', async () => {
    const cms = stubCms()
    cms.state.down = true
    const clock = manualTimers()
    const sync = service(cms, clock.timers, { random: () => 1 })
    sync.start()
    await settle()
    const delays: number[] = [clock.next()!.ms]
    for (let i = 0; i < 9; i++) {
      clock.fire()
      await settle()
      delays.push(clock.next()!.ms)
    }
    expect(UNREADY_RETRY_MAX_MS).toBe(5000)
    expect(delays).toEqual([1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000, 5000, 5000])
    expect(sync.current).toBeUndefined()
    expect(sync.status.consecutiveFailures).toBe(10)

    // A snapshot to serve (here one another instance stored): the failures so far count, and
    // the wait is SYNC_RETRY_MAX's backoff again.
    const other = service(stubCms(), manualTimers().timers)
    await other.syncNow()
    expect(sync.adopt(other.current!)).toBe(true)
    clock.fire()
    await settle()
    expect(clock.next()!.ms).toBe(syncRetryDelay(11, 300_000, () => 1))
    expect(clock.next()!.ms).toBe(300_000)
    await sync.stop()
  })

  it('without a snapshot, still waits as long as a failing CMS asks with Retry-After, and never longer than a SYNC_RETRY_MAX below 5 s', async () => {
    const cms = stubCms()
    cms.state.down = true
    cms.state.retryAfter = '30'
    const clock = manualTimers()
    const sync = service(cms, clock.timers, { random: () => 1 })
    sync.start()
    await settle()
    expect(clock.next()!.ms).toBe(30_000)
    await sync.stop()

    const cms2 = stubCms()
    cms2.state.down = true
    const clock2 = manualTimers()
    const capped = service(cms2, clock2.timers, { random: () => 1, retryMaxMs: 2000 })
    capped.start()
    await settle()
    const delays = [clock2.next()!.ms]
    for (let i = 0; i < 3; i++) {
      clock2.fire()
      await settle()
      delays.push(clock2.next()!.ms)
    }
    expect(delays).toEqual([1000, 2000, 2000, 2000])
    await capped.stop()
  })

  it('runs one sync at a time: concurrent calls share it', async () => {
    const cms = stubCms()
    const sync = service(cms, manualTimers().timers)
    const [a, b] = await Promise.all([sync.syncNow(), sync.syncNow()])
    expect(a).toBe(b)
    // page-size probe, two listing-fields probes, the listing, two details, four dialect probes
    expect(cms.state.requests).toBe(1 + 2 + 1 + 2 + 4)
    await sync.stop()
  })

  it('waits as long as a failing CMS asks with Retry-After, up to SYNC_RETRY_MAX', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    const now = Date.parse('2026-11-22T10:00:00Z')
    const warnings: Array<Record<string, unknown>> = []
    const sync = service(cms, clock.timers, { now: () => now, logger: { ...silent, warn: (fields: object) => void warnings.push(fields as Record<string, unknown>) } })
    sync.start()
    await settle()
    cms.state.down = true
    const nextDelay = async (retryAfter: string | undefined) => {
      cms.state.retryAfter = retryAfter
      clock.fire()
      await settle()
      return clock.next()!.ms
    }
    // Seconds; an HTTP-date (RFC 9110 §10.2.3); one longer than SYNC_RETRY_MAX (300 s here) is cut to it;
    // one shorter than the backoff (8th failure: 96 s) and a garbled one leave the backoff.
    expect(await nextDelay('120')).toBe(120_000)
    expect(await nextDelay('Sun, 22 Nov 2026 10:03:00 GMT')).toBe(180_000)
    expect(await nextDelay('86400')).toBe(300_000)
    for (let i = 0; i < 4; i++) await nextDelay(undefined)
    expect(await nextDelay('1')).toBe(syncRetryDelay(8, 300_000, () => 0.5))
    expect(await nextDelay('soon')).toBe(syncRetryDelay(9, 300_000, () => 0.5))
    expect(warnings.filter((w) => w.retryAfterMs !== undefined).map((w) => w.retryAfterMs)).toEqual([120_000, 180_000, 86_400_000, 1_000])
    await sync.stop()
  })

  it('keeps the wait a CMS asked for when a refresh request comes in, and takes the request along', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    let now = 0
    const sync = service(cms, clock.timers, { now: () => now })
    sync.start()
    await settle()
    cms.state.down = true
    cms.state.retryAfter = '60'
    clock.fire()
    await settle()
    expect(clock.next()!.ms).toBe(60_000)
    const requestsBefore = cms.state.requests
    now = 30_000
    sync.refresh({ ids: [2], reason: 'purge' })
    await settle()
    // No sync before the minute is up: the retry timer is the one still set.
    expect(cms.state.requests).toBe(requestsBefore)
    expect(clock.next()!.ms).toBe(60_000)
    // The retry, when it comes, reads the page the request named.
    cms.state.down = false
    cms.state.title = 'Home, edited'
    now = 60_000
    clock.fire()
    await settle()
    expect(sync.status.consecutiveFailures).toBe(0)
    expect(cms.state.paths.slice(requestsBefore).some((path) => /pages\/2\//.test(path) || /[?&]id=2&/.test(path))).toBe(true)
    await sync.stop()
  })

  it('caps the backoff at SYNC_RETRY_MAX', () => {
    expect(syncRetryDelay(40, 300_000, () => 1)).toBe(300_000)
    expect(syncRetryDelay(40, 300_000, () => 0)).toBe(150_000)
  })
})

describe('refresh requests and full syncs', () => {
  it('coalesces a burst of refresh requests into one incremental sync after the debounce time', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    const synced: string[] = []
    const sync = service(cms, clock.timers, { debounceMs: 100, onSyncEnd: (r) => void synced.push(r.mode) })
    sync.start()
    await settle()
    expect(synced).toEqual(['full'])
    sync.refresh({ ids: [2], reason: 'purge' })
    sync.refresh({ ids: [1], reason: 'purge' })
    sync.refresh({ listing: true, reason: 'purge' })
    expect(clock.next()!.ms).toBe(100)
    cms.state.requests = 0
    clock.fire()
    await settle()
    expect(synced).toEqual(['full', 'incremental'])
    // One listing request and the two named details: no probes, no other page.
    expect(cms.state.requests).toBe(3)
    expect(clock.next()!.ms).toBe(60_000)
    await sync.stop()
  })

  it('refreshes pages named by PURGE in place, and runs the listing pass once any request asks for one', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    const results: Array<{ mode: string; changed?: boolean }> = []
    const sync = service(cms, clock.timers, { debounceMs: 100, onSyncEnd: (r) => void results.push({ mode: r.mode, ...(r.ok ? { changed: r.changed } : {}) }) })
    sync.start()
    await settle()
    const listingPasses = () => cms.state.paths.filter((path) => path.includes('offset=') && !/[?&]id=/.test(path)).length

    cms.state.paths.length = 0
    cms.state.title = 'Home, renamed'
    sync.refresh({ ids: [1], reason: 'purge' })
    clock.fire()
    await settle()
    // The page's item, its detail and its child's detail (which embeds the parent's title).
    expect(listingPasses()).toBe(0)
    expect(cms.state.paths).toHaveLength(3)
    expect(results.at(-1)).toEqual({ mode: 'incremental', changed: true })
    expect(sync.current!.byId.get(2)!.detail.toString()).toContain('Home, renamed')

    cms.state.paths.length = 0
    sync.refresh({ ids: [2], reason: 'purge' })
    sync.refresh({ listing: true, reason: 'purge' })
    clock.fire()
    await settle()
    expect(listingPasses()).toBe(1)
    await sync.stop()
  })

  it('handles a request that arrives during a sync right after it', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    const sync = service(cms, clock.timers, { debounceMs: 50 })
    sync.start()
    sync.refresh({ ids: [2], reason: 'webhook' })
    await settle()
    expect(clock.next()!.ms).toBe(50)
    await sync.stop()
  })

  it('runs a full sync once FULL_SYNC_INTERVAL has passed since the last one', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    let now = 0
    const modes: string[] = []
    const sync = service(cms, clock.timers, { now: () => now, fullIntervalMs: 3_600_000, onSyncEnd: (r) => void modes.push(r.mode) })
    sync.start()
    await settle()
    now = 60_000
    clock.fire()
    await settle()
    now = 3_600_000
    clock.fire()
    await settle()
    expect(modes).toEqual(['full', 'incremental', 'full'])
    expect(sync.current!.fullSyncedAt).toBe(3_600_000)
    await sync.stop()
  })

  it('under SYNC_BUDGET runs no full sync after the first (the details are verified a few at a time instead), and shows the net only while the loop runs', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    let now = 0
    const modes: string[] = []
    const sync = service(cms, clock.timers, { now: () => now, fullIntervalMs: 3_600_000, budget: 0.05, onSyncEnd: (r) => void modes.push(r.mode) })
    expect(sync.net).toBeUndefined()
    sync.start()
    await settle()
    expect(sync.net).toMatchObject({ budget: 0.05, lastWalkEndedAt: undefined, oldestVerifiedAt: 0 })
    const probes = () => cms.state.paths.filter((path) => path.includes('offset=1000000000')).length
    const probedAtStart = probes()
    now = 3_600_000
    clock.fire()
    await settle()
    expect(modes).toEqual(['full', 'incremental'])
    // What a full sync would learn again (the page size, date orders), this walk asks.
    expect(probes()).toBe(probedAtStart + 1)
    expect(sync.current!.fullSyncedAt).toBe(0)
    expect(sync.net?.lastWalkEndedAt).toBe(3_600_000)
    await sync.stop()
    expect(sync.net).toBeUndefined()
  })

  it('retries a full sync that met an edit in progress as an incremental one, and the full one at the next interval', async () => {
    const cms = stubCms()
    const clock = manualTimers()
    let now = 0
    let editDuringDetail = false
    // An editor renames page 2 between its listing item and its detail being read.
    const get: typeof cms.get = async (path, signal) => {
      const answer = await cms.get(path, signal)
      if (editDuringDetail && path.endsWith('/2/')) {
        editDuringDetail = false
        return { ...answer, text: answer.text.replace('"Child"', '"Child, renamed"') }
      }
      return answer
    }
    const results: string[] = []
    const sync = service({ ...cms, get }, clock.timers, {
      now: () => now, fullIntervalMs: 3_600_000, onSyncEnd: (r) => void results.push(`${r.mode}:${r.ok ? 'ok' : r.code}`),
    })
    sync.start()
    await settle()
    now = 3_600_000
    editDuringDetail = true
    clock.fire()
    await settle()
    clock.fire() // the retry
    await settle()
    expect(results).toEqual(['full:ok', 'full:SYNC_INCONSISTENT', 'incremental:ok'])
    clock.fire() // the next interval: the full sync is due, and tried again
    await settle()
    expect(results.at(-1)).toBe('full:ok')
    await sync.stop()
  })

  it('takes a newer snapshot from the syncing instance, and ignores one it already has', async () => {
    const cms = stubCms()
    const leader = service(cms, manualTimers().timers)
    const follower = service(cms, manualTimers().timers)
    await leader.syncNow()
    expect(follower.receive(leader.current!)).toBe(true)
    expect(follower.receive(leader.current!)).toBe(false)
    cms.state.title = 'Edited'
    await leader.syncNow()
    expect(follower.receive(leader.current!)).toBe(true)
    expect(follower.current!.pages.at(0)!.title).toBe('Edited')
    await leader.stop()
  })
})
