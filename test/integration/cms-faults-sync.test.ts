/**
 * CMS faults met by a sync: whatever the CMS does, readers keep getting the last good
 * snapshot byte for byte (docs/architecture.md#decisions, "Never publish a bad tree"), `/readyz`, the logs and
 * `/metrics` say what went wrong and with which code, and the first good sync afterwards publishes
 * what the CMS changed meanwhile. `sync.test.ts` checks the refusals themselves; this suite checks
 * what readers and operators see around them.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Fault, FaultContext } from '../fake-wagtail/index.js'
import type { Harness } from '../helpers/start-shield.js'
import {
  editPage, eventually, faultCases, manualTimers, metric, moved, PINO_WARN, readyz, scrape, served, snapshotUrls, startObserved,
  SYNC_FAILED_MSG, titleServed,
} from './cms-faults-support.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** The sync's walk of the listing (not the page-size probe, which asks for offset=10^9). */
const isWalk = (ctx: FaultContext, offset = '0') => ctx.kind === 'list' && ctx.query.get('offset') === offset

describe('a sync that meets a failing CMS', () => {
  it.each(faultCases)('keeps serving the last good snapshot on $name, logs $code, and publishes the edits once the CMS is back', async (c) => {
    let clock = 1_700_000_000_000
    const started = await startObserved({ env: c.env, deps: { now: () => clock } })
    h = started.h
    const { logs } = started
    const edit = editPage(h.origin)
    const urls = [edit.url, ...snapshotUrls(h)]
    const before = await served(h, urls)
    const version = h.app.shield.sync.current!.version
    // Two minutes pass: the snapshot being served is now that old.
    clock += 120_000
    h.origin.setFault((ctx) => (isWalk(ctx) ? c.fault : undefined))
    h.origin.resetHits()
    logs.clear()
    const m0 = await scrape(h)

    const result = await h.app.shield.sync.syncNow()
    expect(result.ok).toBe(false)
    // The sync gave up at the first failed request (UPSTREAM_RETRIES=0 in the harness).
    expect(h.origin.hits.total).toBe(1)

    // Readers: the same status, bytes, ETag and Cache-Status as before the failure.
    expect(await served(h, urls)).toEqual(before)
    const ready = await readyz(h)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({
      ready: true, cms: 'failing', snapshot: { version, ageSeconds: 120 },
      sync: { consecutiveFailures: 1, lastMode: 'incremental', lastError: expect.stringMatching(new RegExp(`^${c.code}: `)) },
    })
    // Never the CMS's address (an ECONNREFUSED message names it): that is for the log only.
    expect(JSON.stringify(ready.body)).not.toContain(new URL(h.origin.url).host)

    const failures = logs.withMessage(SYNC_FAILED_MSG)
    expect(failures).toHaveLength(1)
    expect(failures[0]).toMatchObject({ level: PINO_WARN, code: c.code, mode: 'incremental', failures: 1, keptVersion: version, err: { code: c.code } })
    expect(logs.withMessage('snapshot: swapped in')).toHaveLength(0)

    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_sync_runs_total', { mode: 'incremental', result: 'failed' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_sync_runs_total')).toBe(1)
    expect(moved(m0, m1, 'cms_shield_sync_failures_total', { code: c.code })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total', { kind: 'list', status: c.cmsStatus })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total')).toBe(1)
    expect(metric(m1, 'cms_shield_snapshot_version')).toBe(version)
    expect(metric(m1, 'cms_shield_snapshot_age_seconds')).toBe(120)
    expect(metric(m1, 'cms_shield_sync_last_success_timestamp_seconds')).toBe((clock - 120_000) / 1000)

    // The CMS is back: the next sync publishes the edit made during the outage.
    h.origin.setFault(undefined)
    logs.clear()
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
    expect((await readyz(h)).body).toMatchObject({
      cms: 'ok', snapshot: { version: version + 1, ageSeconds: 0 }, sync: { consecutiveFailures: 0, lastError: null },
    })
    expect(logs.withMessage('sync: done')).toMatchObject([{ changed: true, version: version + 1 }])
    expect(logs.withMessage(SYNC_FAILED_MSG)).toHaveLength(0)
    const m2 = await scrape(h)
    expect(moved(m1, m2, 'cms_shield_sync_runs_total', { mode: 'incremental', result: 'changed' })).toBe(1)
    expect(moved(m1, m2, 'cms_shield_snapshot_swaps_total', { source: 'sync' })).toBe(1)
    expect(metric(m2, 'cms_shield_sync_last_success_timestamp_seconds')).toBe(clock / 1000)
  })
})

describe('a sync that reads JSON of the wrong shape', () => {
  it('refuses a 200 whose JSON is not a listing (a DRF error object), logs UPSTREAM_BAD_RESPONSE, and keeps serving', async () => {
    const started = await startObserved()
    h = started.h
    const urls = snapshotUrls(h)
    const before = await served(h, urls)
    h.origin.setFault((ctx) => (isWalk(ctx) ? { type: 'json', status: 200, body: { detail: 'Authentication credentials were not provided.' } } : undefined))
    const result = await h.app.shield.sync.syncNow()
    expect(!result.ok && result.error.message).toMatch(/meta\.total_count is not an integer/)
    expect(await served(h, urls)).toEqual(before)
    expect(started.logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ code: 'UPSTREAM_BAD_RESPONSE', failures: 1 }])
    h.origin.setFault(undefined)
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
  })
})

interface InconsistentCase {
  readonly name: string
  readonly limitMax?: number
  /** Makes the CMS inconsistent for the next sync (after `editPage` ran). */
  arrange(h: Harness): Promise<void> | void
  readonly message: RegExp
  /** A tree that does not hold together is read again in full before the sync gives up (sync-service.ts). */
  readonly mode: 'incremental' | 'full'
}

async function originJson(h: Harness, url: string): Promise<Record<string, unknown> & { meta: { parent: { id: number } } }> {
  const response = await h.origin_get(url)
  expect(response.status).toBe(200)
  return JSON.parse(response.body)
}

/** The page `editPage` changed. */
const editedId = (h: Harness) => h.origin.pages().find((p) => p.title.endsWith('(edited during the outage)'))!.id

/** Replaces the answer to one request with a JSON body, keeping the API's headers. */
function answerWith(h: Harness, match: (ctx: FaultContext) => boolean, body: unknown): void {
  const fault: Fault = { type: 'json', status: 200, body }
  h.origin.setFault((ctx) => (match(ctx) ? fault : undefined))
}

const inconsistentCases: readonly InconsistentCase[] = [
  {
    // Offset paging over a tree an editor changes: the moved subtree shows up a second time further on.
    name: 'a page moved while the listing is paged shows up twice',
    limitMax: 20,
    arrange(h) {
      const snapshot = h.app.shield.sync.current!
      const early = snapshot.pages.slice().find((p) => p.order > 2 && p.order < 15 && p.parentId !== null && p.parentId !== snapshot.rootId)!
      const lastLanding = h.origin.pages().filter((p) => p.type === 'cms.LandingPage').at(-1)!
      let done = false
      h.origin.onRequest((ctx) => {
        if (!done && isWalk(ctx, '20')) {
          done = true
          h.origin.movePage(early.id, lastLanding.id)
        }
      })
    },
    message: /page \d+ is listed twice/,
    mode: 'incremental',
  },
  {
    name: 'a page deleted while the listing is paged changes total_count',
    limitMax: 20,
    arrange(h) {
      const snapshot = h.app.shield.sync.current!
      const leaf = snapshot.pages.slice().findLast((p) => !snapshot.childrenOf.has(p.id) && p.id !== editedId(h))!
      h.origin.onRequest((ctx) => {
        if (isWalk(ctx, '20') && h.origin.pages().some((p) => p.id === leaf.id)) h.origin.removePage(leaf.id)
      })
    },
    message: /total_count changed from 89 to 88 while paging/,
    mode: 'incremental',
  },
  {
    name: 'the listing ends before total_count',
    limitMax: 20,
    arrange: (h) => answerWith(h, (ctx) => isWalk(ctx, '40'), { meta: { total_count: 89 }, items: [] }),
    message: /the listing ended after 40 of 89 pages/,
    mode: 'incremental',
  },
  {
    // An emptied CMS (wrong site, wiped database) must not empty the replica.
    name: 'the CMS suddenly lists no pages',
    arrange: (h) => answerWith(h, (ctx) => isWalk(ctx), { meta: { total_count: 0 }, items: [] }),
    message: /the CMS lists no pages/,
    mode: 'full',
  },
  {
    name: 'the edited page names a parent that is not in the tree',
    async arrange(h) {
      const id = editedId(h)
      const detail = await originJson(h, `/api/v1/cms/pages/${id}/`)
      detail.meta.parent.id = 424_242
      answerWith(h, (ctx) => ctx.kind === 'detail' && ctx.id === id, detail)
    },
    message: /names parent 424242, which is not in the tree/,
    mode: 'full',
  },
  {
    name: 'the edited page names its own child as its parent (a cycle)',
    async arrange(h) {
      const snapshot = h.app.shield.sync.current!
      const page = snapshot.pages.slice().find((p) => p.parentId !== null && p.parentId !== snapshot.rootId && snapshot.childrenOf.has(p.id))!
      const child = snapshot.childrenOf.get(page.id)![0]!
      h.origin.updatePage(page.id, { title: `${page.title} (moved below its child)` })
      const detail = await originJson(h, `/api/v1/cms/pages/${page.id}/`)
      detail.meta.parent.id = child.id
      answerWith(h, (ctx) => ctx.kind === 'detail' && ctx.id === page.id, detail)
    },
    message: /form a cycle/,
    mode: 'full',
  },
]

describe('a sync that reads an inconsistent tree', () => {
  it.each(inconsistentCases)('keeps serving the last good snapshot when $name, logs SYNC_INCONSISTENT, and recovers', async (c) => {
    const started = await startObserved(c.limitMax === undefined ? {} : { origin: { limitMax: c.limitMax } })
    h = started.h
    const { logs } = started
    const edit = editPage(h.origin)
    const urls = [edit.url, ...snapshotUrls(h)]
    const before = await served(h, urls)
    const version = h.app.shield.sync.current!.version
    await c.arrange(h)
    logs.clear()
    const m0 = await scrape(h)

    const result = await h.app.shield.sync.syncNow()
    expect(result.ok).toBe(false)
    expect(!result.ok && result.error.message).toMatch(c.message)
    expect(await served(h, urls)).toEqual(before)
    const ready = await readyz(h)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ ready: true, cms: 'failing', snapshot: { version }, sync: { consecutiveFailures: 1, lastMode: c.mode } })
    // The code and its meaning only: a message may name the CMS's address (it is in the log).
    expect(ready.body.sync.lastError).toBe('SYNC_INCONSISTENT: the page tree read from the CMS is inconsistent')
    expect(logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ level: PINO_WARN, code: 'SYNC_INCONSISTENT', mode: c.mode, failures: 1, keptVersion: version }])
    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_sync_runs_total', { mode: c.mode, result: 'failed' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_sync_failures_total', { code: 'SYNC_INCONSISTENT' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_snapshot_swaps_total')).toBe(0)
    expect(metric(m1, 'cms_shield_snapshot_version')).toBe(version)

    h.origin.setFault(undefined)
    h.origin.onRequest(undefined)
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
    expect((await readyz(h)).body).toMatchObject({ cms: 'ok', snapshot: { version: version + 1 }, sync: { consecutiveFailures: 0 } })
  })
})

describe('retries', () => {
  it('backs off after each failed sync while readers keep the old snapshot, and the scheduled retry publishes once the CMS is back', async () => {
    const clock = manualTimers()
    // The sync loop's own timers only: the safety net's are tested in sync-budget.test.ts.
    const started = await startObserved({ env: { SYNC_BUDGET: '0' }, deps: { autoSync: true, timers: clock.timers, random: () => 0 } })
    h = started.h
    const { logs } = started
    // The first sync ran; the next one waits for SYNC_INTERVAL (1h in the harness).
    expect(clock.pending()).toEqual([3_600_000])
    const edit = editPage(h.origin)
    const urls = [edit.url, ...snapshotUrls(h)]
    const before = await served(h, urls)
    h.origin.setFault(() => ({ type: 'status', status: 503 }))
    logs.clear()

    // backoff.ts: 1 s, 2 s, 4 s … with "equal jitter" (random() = 0 takes the lower half).
    for (const [failures, delay] of [[1, 500], [2, 1000], [3, 2000]] as const) {
      clock.fireAll()
      const result = await h.app.shield.sync.syncNow() // joins the sync the timer started
      expect(result.ok).toBe(false)
      expect(clock.pending()).toEqual([delay])
      expect((await readyz(h)).body.sync).toMatchObject({ consecutiveFailures: failures })
      expect(await served(h, urls)).toEqual(before)
    }
    expect(logs.withMessage(SYNC_FAILED_MSG).map((line) => [line['failures'], line['code']])).toEqual([
      [1, 'UPSTREAM_BAD_STATUS'], [2, 'UPSTREAM_BAD_STATUS'], [3, 'UPSTREAM_BAD_STATUS'],
    ])
    expect(metric(await scrape(h), 'cms_shield_sync_runs_total', { result: 'failed' })).toBe(3)

    h.origin.setFault(undefined)
    clock.fireAll()
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
    expect(clock.pending()).toEqual([3_600_000])
    expect((await readyz(h)).body).toMatchObject({ cms: 'ok', sync: { consecutiveFailures: 0 } })
  })

  it('absorbs a CMS 503 that a retry cures: no failed sync, the failed attempt still counted', async () => {
    const started = await startObserved({ env: { UPSTREAM_RETRIES: '2' }, deps: { random: () => 0 } })
    h = started.h
    const edit = editPage(h.origin)
    let failed = 0
    h.origin.setFault((ctx) => (isWalk(ctx) && failed++ === 0 ? { type: 'status', status: 503 } : undefined))
    h.origin.resetHits()
    const m0 = await scrape(h)
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total', { kind: 'list', status: '503' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_sync_runs_total', { result: 'failed' })).toBe(0)
    expect(started.logs.withMessage(SYNC_FAILED_MSG)).toHaveLength(0)
  })

  it('waits as long as a rate-limiting CMS asks (Retry-After) before it syncs again, a PURGE included', async () => {
    const timers = manualTimers()
    let clock = 1_700_000_000_000
    // The sync loop's own timers only: the safety net's are tested in sync-budget.test.ts.
    const started = await startObserved({ env: { SYNC_BUDGET: '0' }, deps: { autoSync: true, timers: timers.timers, random: () => 0, now: () => clock } })
    h = started.h
    await eventually(() => h!.app.shield.sync.current !== undefined && !h!.app.shield.sync.status.running, 'the first sync')
    const edit = editPage(h.origin)
    h.origin.setFault((ctx) => (isWalk(ctx) ? { type: 'status', status: 429, headers: { 'Retry-After': '120' } } : undefined))
    timers.fireAll()
    await eventually(() => h!.app.shield.sync.status.consecutiveFailures === 1, 'the failed sync')
    // The retry is two minutes out, not the one-second backoff of a first failure.
    expect(timers.pending()).toEqual([120_000])
    expect(started.logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ code: 'UPSTREAM_BAD_STATUS', retryAfterMs: 120_000 }])

    // An editor publishes: the PURGE is taken, but the CMS is not asked before its two minutes are up.
    h.origin.resetHits()
    clock += 30_000
    const purge = await h.app.inject({ method: 'PURGE', url: edit.url })
    expect(purge.statusCode).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(h.origin.hits.total).toBe(0)
    expect(timers.pending()).toEqual([120_000])

    // Then the retry publishes the edit.
    h.origin.setFault(undefined)
    clock += 90_000
    timers.fireAll()
    await eventually(() => h!.app.shield.sync.status.consecutiveFailures === 0, 'the retry')
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
  })

  it('gives up after UPSTREAM_RETRIES more attempts on a CMS that keeps answering 503, each attempt counted', async () => {
    const started = await startObserved({ env: { UPSTREAM_RETRIES: '2' }, deps: { random: () => 0 } })
    h = started.h
    h.origin.setFault((ctx) => (isWalk(ctx) ? { type: 'status', status: 503 } : undefined))
    h.origin.resetHits()
    const m0 = await scrape(h)
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    expect(h.origin.hits.total).toBe(3)
    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total', { kind: 'list', status: '503' })).toBe(3)
    expect(started.logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ code: 'UPSTREAM_BAD_STATUS', failures: 1 }])
  })
})
