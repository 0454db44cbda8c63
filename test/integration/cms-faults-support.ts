/**
 * Shared tools of the `cms-faults-*` suites: the faults the fake CMS can inject with what each one
 * should look like from outside (error code in the logs, status label in the metrics, status a
 * read-through client gets), a log capture, a `/metrics` scrape, and a record of what readers get.
 */
import { expect } from 'vitest'
import type { ErrorCode } from '../../src/errors.js'
import type { FakeWagtail, Fault } from '../fake-wagtail/index.js'
import { startShield, type Harness, type HarnessOptions } from '../helpers/start-shield.js'

/**
 * Long enough for every normal request on a loaded 2-core machine, short enough that a hung or
 * trickling CMS costs a test about a second.
 */
export const TIMEOUT_ENV = { UPSTREAM_TIMEOUT: '1s' }

export interface FaultCase {
  readonly name: string
  readonly fault: Fault
  readonly env?: Record<string, string>
  /** The catalogue code the failure is logged with (src/errors.ts). */
  readonly code: ErrorCode
  /** `status` label of `cms_shield_cms_requests_total` for the failed attempt. */
  readonly cmsStatus: string
  /** What a read-through client gets: 504 when the CMS was too slow, 502 otherwise. */
  readonly clientStatus: 502 | 504
}

/** One case per way a CMS (or what stands in front of it) can fail one request. */
export const faultCases: readonly FaultCase[] = [
  { name: 'a Django 500 page', fault: { type: 'status', status: 500 }, code: 'UPSTREAM_BAD_STATUS', cmsStatus: '500', clientStatus: 502 },
  {
    name: 'a 502 from the gateway in front of it',
    fault: { type: 'status', status: 502, body: '<html><body><h1>502 Bad Gateway</h1></body></html>\n' },
    code: 'UPSTREAM_BAD_STATUS', cmsStatus: '502', clientStatus: 502,
  },
  { name: 'a 503', fault: { type: 'status', status: 503 }, code: 'UPSTREAM_BAD_STATUS', cmsStatus: '503', clientStatus: 502 },
  { name: 'no answer at all (timeout)', fault: { type: 'hang' }, env: TIMEOUT_ENV, code: 'UPSTREAM_TIMEOUT', cmsStatus: 'timeout', clientStatus: 504 },
  { name: 'a reset connection', fault: { type: 'reset' }, code: 'UPSTREAM_UNAVAILABLE', cmsStatus: 'error', clientStatus: 502 },
  {
    // A byte every 50 ms never leaves the socket idle long enough for undici's own timeouts:
    // only the whole-answer deadline (src/upstream/http-client.ts) ends it.
    name: 'a body that trickles', fault: { type: 'trickle', bytesPerChunk: 1, intervalMs: 50 }, env: TIMEOUT_ENV,
    code: 'UPSTREAM_TIMEOUT', cmsStatus: 'timeout', clientStatus: 504,
  },
  { name: 'truncated JSON', fault: { type: 'malformed-json' }, code: 'UPSTREAM_BAD_RESPONSE', cmsStatus: '200', clientStatus: 502 },
  { name: 'an HTML login page with status 200', fault: { type: 'wrong-content-type' }, code: 'UPSTREAM_BAD_RESPONSE', cmsStatus: '200', clientStatus: 502 },
  {
    name: 'a body over UPSTREAM_MAX_BODY', fault: { type: 'oversize', bytes: 300_000 }, env: { UPSTREAM_MAX_BODY: '100kb' },
    code: 'UPSTREAM_BODY_TOO_LARGE', cmsStatus: 'error', clientStatus: 502,
  },
]

export interface LogLine {
  readonly level: number
  readonly msg: string
  readonly [key: string]: unknown
}

export interface LogCapture {
  readonly stream: { write(line: string): void }
  lines(): LogLine[]
  /** Lines with exactly this message. */
  withMessage(msg: string): LogLine[]
  /** Forgets what was written so far (each phase of a test reads its own lines). */
  clear(): void
}

/** pino writes one JSON object per line to `deps.logStream` (src/app.ts). */
export function captureLogs(): LogCapture {
  let text = ''
  const lines = () => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine)
  return {
    stream: { write: (line: string) => void (text += line) },
    lines,
    withMessage: (msg) => lines().filter((line) => line.msg === msg),
    clear: () => void (text = ''),
  }
}

export const PINO_WARN = 40
export const SYNC_FAILED_MSG = 'sync: failed; the last good snapshot keeps serving'
export const READ_THROUGH_FAILED_MSG = 'read-through to the CMS failed'
export const READ_THROUGH_STALE_MSG = 'read-through: the CMS failed; serving the stored answer'

/** `startObserved` for a suite that closes each harness in its own `afterEach` (`cleanups`). */
export function observer(cleanups: Array<() => Promise<unknown>>): (options: HarnessOptions) => Promise<{ h: Harness; logs: LogCapture }> {
  return async (options) => {
    const started = await startObserved(options)
    cleanups.push(() => started.h.close())
    return started
  }
}

/** A harness whose app logs at `info` into memory. */
export async function startObserved(options: HarnessOptions = {}): Promise<{ h: Harness; logs: LogCapture }> {
  const logs = captureLogs()
  const h = await startShield({
    ...options,
    env: { LOG_LEVEL: 'info', ...options.env },
    deps: { ...options.deps, logger: undefined, logStream: logs.stream },
  })
  return { h, logs }
}

export type Samples = ReadonlyArray<{ readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly value: number }>

/** `/metrics` through the app, parsed into samples (label values here never hold quotes or commas). */
export async function scrape(h: Harness): Promise<Samples> {
  const response = await h.app.inject({ method: 'GET', url: '/metrics' })
  expect(response.statusCode).toBe(200)
  const samples: Array<Samples[number]> = []
  for (const line of response.body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').split(',').filter((p) => p !== '')) {
      const [key, quoted] = pair.split('=') as [string, string]
      labels[key] = quoted.slice(1, -1)
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** The sum of the series named `name` whose labels include `labels`; `undefined` when there is none. */
export function metric(samples: Samples, name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0)
}

/** How much a counter moved between two scrapes (a series absent before counts from 0). */
export function moved(before: Samples, after: Samples, name: string, labels: Record<string, string> = {}): number {
  return (metric(after, name, labels) ?? 0) - (metric(before, name, labels) ?? 0)
}

export interface Served {
  readonly url: string
  readonly status: number
  readonly body: string
  readonly etag: unknown
  readonly cacheStatus: unknown
}

/** What readers get for each URL now. */
export async function served(h: Harness, urls: readonly string[]): Promise<Served[]> {
  return Promise.all(
    urls.map(async (url) => {
      const response = await h.get(url)
      return { url, status: response.status, body: response.body, etag: response.headers['etag'], cacheStatus: response.headers['cache-status'] }
    }),
  )
}

/** Snapshot-served URLs covering a list, a tree filter, a detail and a find redirect. */
export function snapshotUrls(h: Harness): string[] {
  const snapshot = h.app.shield.sync.current!
  const page = snapshot.pages.slice().find((p) => p.type === 'cms.GenericPage')!
  return [
    '/api/v1/cms/pages/?limit=250',
    `/api/v1/cms/pages/?child_of=${page.parentId}`,
    `/api/v1/cms/pages/${page.id}/`,
    `/api/v1/cms/pages/find/?id=${page.id}`,
  ]
}

/** Edits a page in the CMS, so the next good sync is visible in its detail. */
export function editPage(cms: FakeWagtail): { url: string; oldTitle: string; newTitle: string } {
  const page = cms.pages().find((p) => p.parentId !== null && p.type === 'cms.GenericPage')!
  const newTitle = `${page.title} (edited during the outage)`
  cms.updatePage(page.id, { title: newTitle })
  return { url: `/api/v1/cms/pages/${page.id}/`, oldTitle: page.title, newTitle }
}

export async function titleServed(h: Harness, url: string): Promise<string> {
  const response = await h.get(url)
  expect(response.status, url).toBe(200)
  return (JSON.parse(response.body) as { title: string }).title
}

export async function readyz(h: Harness): Promise<{ status: number; body: Record<string, unknown> & { sync: Record<string, unknown> } }> {
  const response = await h.get('/readyz')
  return { status: response.status, body: JSON.parse(response.body) }
}

/**
 * Timers a test fires by hand (deps.timers): the sync's retry and interval timers become
 * inspectable delays instead of real waits.
 */
export interface ManualTimers {
  readonly timers: { setTimeout(callback: () => void, ms: number): unknown; clearTimeout(handle: unknown): void }
  /** Delays of the timers set and not yet fired or cleared, oldest first. */
  pending(): number[]
  /** Fires every pending timer once (those they set stay pending). */
  fireAll(): void
}

export function manualTimers(): ManualTimers {
  const pending = new Map<number, { callback: () => void; ms: number }>()
  let next = 1
  return {
    timers: {
      setTimeout(callback, ms) {
        const handle = next++
        pending.set(handle, { callback, ms })
        return handle
      },
      clearTimeout(handle) {
        pending.delete(handle as number)
      },
    },
    pending: () => [...pending.values()].map((t) => t.ms),
    fireAll() {
      const due = [...pending.entries()]
      for (const [handle, timer] of due) {
        pending.delete(handle)
        timer.callback()
      }
    },
  }
}

/** Waits, event loop turn by turn, until `check` holds; bounded in time so a broken promise fails fast. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
