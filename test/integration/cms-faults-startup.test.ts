/**
 * The CMS down when cms-shield starts: without a stored snapshot every API request gets
 * a clear 503 with Retry-After and `/readyz` says not ready; with one in SNAPSHOT_FILE readers get
 * its bytes at once and `/readyz` is ready while saying the CMS fails. Either way the retry the
 * sync schedules (injected timers, no sleeping) picks the CMS up once it is back: within 5 s of it
 * when nothing serves meanwhile, after the usual backoff when a snapshot does. Also: a hung CMS
 * does not hold a shutdown back.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { freePort } from '../helpers/free-port.js'
import { reseal, storedParts } from '../helpers/snapshot-bytes.js'
import { asServedByShield, type Harness } from '../helpers/start-shield.js'
import { syncRetryDelay } from '../../src/sync/backoff.js'
import { UNREADY_RETRY_MAX_MS } from '../../src/sync/sync-service.js'
import {
  editPage, eventually, manualTimers, metric, observer, PINO_WARN, READ_THROUGH_FAILED_MSG, readyz, scrape, served, snapshotUrls,
  SYNC_FAILED_MSG, titleServed,
} from './cms-faults-support.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const observed = observer(cleanups)

async function fakeCms(port?: number): Promise<FakeWagtail> {
  const cms = await startFakeWagtail({ pages: generateSite(), ...(port === undefined ? {} : { port }) })
  cleanups.push(() => cms.close())
  return cms
}

/** Tests with hand-fired timers count the sync loop's own: the safety net's are tested in sync-budget.test.ts (SYNC_BUDGET=0). */
const NOT_READY = { message: 'cms-shield has not loaded the page tree yet' }

/**
 * A CMS that is down: its port is held by a server that drops every connection, so no other
 * test's server can take the port meanwhile (tests run in parallel). `up()` starts the fake CMS
 * on the same port.
 */
async function downCms(): Promise<{ port: number; up(): Promise<FakeWagtail> }> {
  const sockets = new Set<Socket>()
  const holder = createServer((socket) => {
    sockets.add(socket)
    socket.destroy()
  })
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const port = (holder.address() as AddressInfo).port
  const release = () => new Promise<void>((resolve) => holder.close(() => resolve()))
  cleanups.push(async () => {
    if (holder.listening) await release()
  })
  return {
    port,
    async up() {
      await release()
      return fakeCms(port)
    },
  }
}

describe('the CMS is down at start and nothing is stored', () => {
  it('answers every API request 503 with Retry-After, is not ready, and serves once a scheduled retry reaches the CMS', async () => {
    // Nothing listens on the CMS's port yet: every connection is refused.
    const port = await freePort()
    const timers = manualTimers()
    const { h, logs } = await observed({
      env: { UPSTREAM_URL: `http://127.0.0.1:${port}`, SYNC_BUDGET: '0' },
      synced: false,
      deps: { autoSync: true, timers: timers.timers, random: () => 0 },
    })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false) // joins the sync started with the app

    const api = ['/api/v1/cms/pages/', '/api/v1/cms/pages/3/', '/api/v1/cms/pages/find/?html_path=/', '/api/v1/cms/pages/?search=foo']
    for (const url of api) {
      const response = await h.get(url)
      expect(response.status, url).toBe(503)
      expect(response.headers['retry-after'], url).toBe('1')
      expect(response.headers['content-type'], url).toBe('application/json')
      expect(JSON.parse(response.body), url).toEqual(NOT_READY)
    }
    // Without a tree nothing is read through either: no request went to the CMS for them.
    expect(logs.withMessage(READ_THROUGH_FAILED_MSG)).toHaveLength(0)
    const ready = await readyz(h)
    expect(ready.status).toBe(503)
    expect(ready.body).toMatchObject({ ready: false, snapshot: null, cms: 'failing', sync: { consecutiveFailures: 1, lastMode: 'full' } })
    expect((await h.get('/healthz')).status).toBe(200)

    expect(logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ level: PINO_WARN, code: 'UPSTREAM_UNAVAILABLE', mode: 'full', failures: 1 }])
    expect(logs.withMessage(SYNC_FAILED_MSG)[0]).not.toHaveProperty('keptVersion')
    expect(logs.withMessage('request').filter((line) => line['statusCode'] === 503)).toHaveLength(api.length + 1)
    const m0 = await scrape(h)
    expect(metric(m0, 'cms_shield_snapshot_version')).toBeUndefined()
    expect(metric(m0, 'cms_shield_sync_last_success_timestamp_seconds')).toBeUndefined()
    expect(metric(m0, 'cms_shield_sync_runs_total', { mode: 'full', result: 'failed' })).toBe(1)
    expect(metric(m0, 'cms_shield_cms_requests_total', { kind: 'list', status: 'error' })).toBe(1)
    expect(metric(m0, 'cms_shield_http_requests_total', { route: 'list', status: '503' })).toBe(2)
    // The first retry waits about a second (backoff.ts), not SYNC_INTERVAL.
    expect(timers.pending()).toEqual([500])

    const cms = await fakeCms(port)
    timers.fireAll()
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(timers.pending()).toEqual([3_600_000])
    expect((await readyz(h)).body).toMatchObject({ ready: true, cms: 'ok', snapshot: { version: 1, pages: 89 }, sync: { consecutiveFailures: 0 } })
    const list = await h.get('/api/v1/cms/pages/')
    expect(list.status).toBe(200)
    expect(list.body).toBe(asServedByShield(await (await fetch(`${cms.url}/api/v1/cms/pages/`)).text()))
    expect(metric(await scrape(h), 'cms_shield_snapshot_version')).toBe(1)
  })
})

/**
 * Drives the sync's retries on an injected clock: each pending retry fires after the clock moved
 * by its delay. `cmsUp` runs once when the clock reaches `upAfterMs`. Returns the waits, and
 * when the instance was ready, in ms after the start.
 */
async function retryUntilSynced(
  h: Harness, timers: ReturnType<typeof manualTimers>, clock: { ms: number }, upAfterMs: number, cmsUp: () => Promise<unknown>,
): Promise<{ waits: number[]; syncedAfterMs: number }> {
  const start = clock.ms
  const waits: number[] = []
  let up = false
  while (h.app.shield.sync.status.consecutiveFailures > 0) {
    expect(timers.pending()).toHaveLength(1)
    const [wait] = timers.pending() as [number]
    waits.push(wait)
    clock.ms += wait
    if (!up && clock.ms - start >= upAfterMs) {
      await cmsUp()
      up = true
    }
    timers.fireAll()
    await h.app.shield.sync.syncNow()
    if (clock.ms - start > 3_600_000) throw new Error(`still failing an hour in: waits ${waits.join(', ')}`)
  }
  return { waits, syncedAfterMs: clock.ms - start }
}

describe('the CMS comes up 30 s after cms-shield', () => {
  it('with nothing to serve, retries at least every 5 s and is ready within 5 s of the CMS', async () => {
    const cms = await downCms()
    const port = cms.port
    const timers = manualTimers()
    const clock = { ms: Date.now() }
    // Jitter at its longest: every wait is the whole backoff.
    const { h, logs } = await observed({
      env: { UPSTREAM_URL: `http://127.0.0.1:${port}`, SYNC_RETRY_MAX: '5m', SYNC_BUDGET: '0' },
      synced: false,
      deps: { autoSync: true, timers: timers.timers, random: () => 1, now: () => clock.ms },
    })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    const down = await readyz(h)
    expect(down.status).toBe(503)
    expect(down.body).toMatchObject({ ready: false, snapshot: null, cms: 'failing', sync: { consecutiveFailures: 1, lastError: 'UPSTREAM_UNAVAILABLE: the CMS could not be reached' } })

    const { waits, syncedAfterMs } = await retryUntilSynced(h, timers, clock, 30_000, () => cms.up())
    // 1 s doubling, then the unready cap: 1, 3, 7, 12, 17, 22, 27 s down; at 32 s the CMS answers.
    expect(waits).toEqual([1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000])
    expect(Math.max(...waits)).toBeLessThanOrEqual(UNREADY_RETRY_MAX_MS)
    expect(syncedAfterMs - 30_000).toBeLessThanOrEqual(UNREADY_RETRY_MAX_MS)

    const ready = await readyz(h)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ ready: true, cms: 'ok', snapshot: { version: 1, pages: 89, ageSeconds: 0 }, sync: { consecutiveFailures: 0, lastError: null, lastMode: 'full' } })
    expect(logs.withMessage(SYNC_FAILED_MSG).map((line) => line['failures'])).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(logs.withMessage('sync: done')).toMatchObject([{ mode: 'full', pages: 89, changed: true, version: 1 }])
    expect((await h.get('/api/v1/cms/pages/')).status).toBe(200)
    // Served: the next sync is SYNC_INTERVAL away, as after any good sync.
    expect(timers.pending()).toEqual([3_600_000])
  })
})

describe('the CMS is down at start and SNAPSHOT_FILE holds the last good snapshot', () => {
  /** A CMS whose every connection is reset: down, at the same UPSTREAM_URL the snapshot was synced from. */
  const down = (cms: FakeWagtail) => cms.setFault(() => ({ type: 'reset' }))

  async function storeSnapshot(cms: FakeWagtail, file: string): Promise<{ urls: string[]; before: Awaited<ReturnType<typeof served>>; version: number }> {
    const { h } = await observed({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file } })
    await h.app.shield.persistence!.save(h.app.shield.sync.current!)
    const urls = snapshotUrls(h)
    return { urls, before: await served(h, urls), version: h.app.shield.sync.current!.version }
  }

  it('serves the stored bytes at once, is ready while saying the CMS fails, and publishes the CMS\'s edits once it is back', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cms-shield-faults-')), 'snapshot.bin')
    const cms = await fakeCms()
    const stored = await storeSnapshot(cms, file)
    down(cms)
    const edit = editPage(cms)

    const timers = manualTimers()
    const { h, logs } = await observed({
      sharedOrigin: cms, env: { SNAPSHOT_FILE: file, SYNC_BUDGET: '0' }, synced: false, deps: { autoSync: true, timers: timers.timers, random: () => 0 },
    })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    expect(await served(h, stored.urls)).toEqual(stored.before)
    expect(await titleServed(h, edit.url)).toBe(edit.oldTitle)
    const search = await h.get('/api/v1/cms/pages/?search=foo')
    expect(search.status).toBe(502)
    expect(JSON.parse(search.body)).toEqual({ message: 'the CMS could not answer this query' })
    const ready = await readyz(h)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ ready: true, cms: 'failing', snapshot: { version: stored.version, pages: 89 }, sync: { consecutiveFailures: 1 } })

    expect(logs.withMessage('serving a stored snapshot')).toMatchObject([{ source: `file:${file}`, version: stored.version, pages: 89 }])
    expect(logs.withMessage(SYNC_FAILED_MSG)).toMatchObject([{ level: PINO_WARN, code: 'UPSTREAM_UNAVAILABLE', failures: 1, keptVersion: stored.version }])
    const m0 = await scrape(h)
    expect(metric(m0, 'cms_shield_snapshot_swaps_total', { source: 'storage' })).toBe(1)
    expect(metric(m0, 'cms_shield_snapshot_version')).toBe(stored.version)
    expect(metric(m0, 'cms_shield_sync_runs_total', { result: 'failed' })).toBe(1)
    expect(metric(m0, 'cms_shield_sync_last_success_timestamp_seconds')).toBeUndefined()

    // The CMS is back: the scheduled retry publishes the edit, and the file keeps the new tree.
    cms.setFault(undefined)
    logs.clear()
    timers.fireAll()
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
    expect((await readyz(h)).body).toMatchObject({ cms: 'ok', snapshot: { version: stored.version + 1 } })
    await eventually(() => logs.withMessage('snapshot: saved').some((line) => line['version'] === stored.version + 1), 'the new snapshot to be saved')

    // A restart during the next outage serves the tree the CMS had when it was last reached.
    down(cms)
    const restarted = await observed({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file }, synced: false })
    expect(await titleServed(restarted.h, edit.url)).toBe(edit.newTitle)
  })

  it('backs off up to SYNC_RETRY_MAX while it serves the stored snapshot, as before', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cms-shield-faults-')), 'snapshot.bin')
    const cms = await fakeCms()
    const stored = await storeSnapshot(cms, file)
    down(cms)
    const timers = manualTimers()
    const clock = { ms: Date.now() }
    const { h, logs } = await observed({
      sharedOrigin: cms, env: { SNAPSHOT_FILE: file, SYNC_RETRY_MAX: '5m', SYNC_BUDGET: '0' }, synced: false,
      deps: { autoSync: true, timers: timers.timers, random: () => 1, now: () => clock.ms },
    })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    expect((await readyz(h)).body).toMatchObject({ ready: true, cms: 'failing', snapshot: { version: stored.version } })

    const { waits, syncedAfterMs } = await retryUntilSynced(h, timers, clock, 30_000, async () => cms.setFault(undefined))
    // The snapshot serves meanwhile: no short cap, 1 s doubling (1, 3, 7, 15 s down; 31 s up).
    expect(waits).toEqual([1, 2, 3, 4, 5].map((failures) => syncRetryDelay(failures, 300_000, () => 1)))
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16_000])
    expect(syncedAfterMs).toBe(31_000)
    expect(logs.withMessage(SYNC_FAILED_MSG).map((line) => line['keptVersion'])).toEqual(Array(5).fill(stored.version))
    expect((await readyz(h)).body).toMatchObject({ ready: true, cms: 'ok', sync: { consecutiveFailures: 0 } })
  })

  it('serves the listings of a stored snapshot whose details part does not decompress, and answers only its pages 500, naming the part', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cms-shield-faults-')), 'snapshot.bin')
    const cms = await fakeCms()
    const stored = await storeSnapshot(cms, file)
    // The last part is the last group's details. Zeros are no brotli stream; the checksum is made
    // again, as a writer's bug would leave it (a damaged file fails its checksum, the test below).
    const bytes = Buffer.from(readFileSync(file))
    bytes.fill(0, storedParts(bytes).at(-1)![0])
    writeFileSync(file, reseal(bytes))
    down(cms)

    const { h, logs } = await observed({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file }, synced: false })
    expect((await readyz(h)).status).toBe(200)
    const now = await served(h, stored.urls)
    // The listings and the find redirect read no detail body: they serve the stored bytes.
    for (const index of [0, 1, 3]) expect(now[index]).toEqual(stored.before[index])
    expect(now[2]!.status).toBe(500)
    expect(JSON.parse(now[2]!.body)).toEqual({ message: 'internal error' })
    expect(logs.withMessage('request failed')).toMatchObject([
      { err: { message: expect.stringMatching(/^stored snapshot details part #\d+ could not be read: /) }, url: stored.urls[2] },
    ])
    // The part's failure is kept: a second read fails alike, without decompressing again.
    expect((await h.get(stored.urls[2]!)).status).toBe(500)
  })

  it('does not serve a damaged file: not ready until the CMS is back', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cms-shield-faults-')), 'snapshot.bin')
    const cms = await fakeCms()
    await storeSnapshot(cms, file)
    // Cut short, as by a disk that filled up under a copy made by hand.
    const bytes = readFileSync(file)
    writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length / 2)))
    down(cms)

    const { h, logs } = await observed({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file }, synced: false })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    expect(logs.lines().filter((line) => line.level === PINO_WARN && line.msg.startsWith('snapshot: skipped'))).toMatchObject([{ target: `file:${file}` }])
    expect((await readyz(h)).status).toBe(503)
    const list = await h.get('/api/v1/cms/pages/')
    expect(list.status).toBe(503)
    expect(JSON.parse(list.body)).toEqual(NOT_READY)

    cms.setFault(undefined)
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    expect((await h.get('/api/v1/cms/pages/')).status).toBe(200)
  })
})

describe('shutdown', () => {
  it('does not wait for a CMS that hangs in the middle of a sync', async () => {
    const { h } = await observed({ env: { UPSTREAM_TIMEOUT: '15s' } })
    h.origin.setFault((ctx) => (ctx.kind === 'list' ? { type: 'hang' } : undefined))
    h.origin.resetHits()
    const sync = h.app.shield.sync.syncNow()
    await eventually(() => h.origin.hits.list > 0, 'the sync to reach the CMS')
    const started = Date.now()
    await h.app.close()
    expect(Date.now() - started).toBeLessThan(5000)
    expect((await sync).ok).toBe(false)
  })
})
