/**
 * Keeps the snapshot in step with the CMS: a full sync at start, then every `SYNC_INTERVAL`.
 * A failed or inconsistent sync changes nothing readers see; it is retried with backoff while the
 * last good snapshot keeps serving. One sync runs at a time.
 * @module
 */
import { isProxyError } from '../errors.js'
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import { buildSnapshot, TreeInconsistentError } from '../tree/build-snapshot.js'
import type { Dialect, Snapshot } from '../tree/snapshot.js'
import { syncRetryDelay } from './backoff.js'
import { fetchTree, type FetchProgress } from './fetch-tree.js'
import { probeDialect, probeLimitMax } from './probe-dialect.js'
import type { UpstreamGet } from './upstream-port.js'

export interface SyncLogger {
  info(details: object, message: string): void
  warn(details: object, message: string): void
  debug(details: object, message: string): void
}

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export interface SyncServiceOptions {
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly concurrency: number
  readonly intervalMs: number
  readonly retryMaxMs: number
  readonly logger: SyncLogger
  readonly now: () => number
  readonly random: () => number
  readonly timers?: Timers
  /** How often a long sync logs its progress. */
  readonly progressEveryMs?: number
  /** Called after a snapshot with different content was swapped in (by a sync, or adopted from storage). */
  readonly onSnapshot?: (snapshot: Snapshot, previous: Snapshot | undefined, source: 'sync' | 'storage') => void
}

export type SyncResult =
  | { readonly ok: true; readonly changed: boolean; readonly pages: number; readonly durationMs: number }
  | { readonly ok: false; readonly error: Error; readonly durationMs: number }

export interface SyncStatus {
  readonly lastAttemptAt: number | undefined
  readonly lastSuccessAt: number | undefined
  readonly lastError: string | undefined
  readonly consecutiveFailures: number
  readonly running: boolean
}

export interface SyncService {
  readonly current: Snapshot | undefined
  readonly status: SyncStatus
  /** Starts the loop: a sync now, then on schedule. */
  start(): void
  /**
   * Serves a snapshot loaded from storage (warm start) until a sync brings a newer one; ignored
   * once the service has a snapshot of its own.
   */
  adopt(snapshot: Snapshot): boolean
  /** Runs a sync now, or joins the one running. Never throws: the outcome says what happened. */
  syncNow(): Promise<SyncResult>
  /** Stops the loop and cancels a sync in flight. */
  stop(): Promise<void>
}

const defaultTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export function createSyncService(options: SyncServiceOptions): SyncService {
  const timers = options.timers ?? defaultTimers
  const progressEveryMs = options.progressEveryMs ?? 5000
  let current: Snapshot | undefined
  let dialect: Dialect | undefined
  let running: Promise<SyncResult> | undefined
  let controller: AbortController | undefined
  let timer: unknown
  let stopped = true
  const status = {
    lastAttemptAt: undefined as number | undefined,
    lastSuccessAt: undefined as number | undefined,
    lastError: undefined as string | undefined,
    consecutiveFailures: 0,
  }

  async function learnDialect(rootId: number, limitMax: number | null, signal: AbortSignal): Promise<Dialect> {
    if (dialect && dialect.limitMax === limitMax) return dialect
    return { limitMax, ...(await probeDialect(options.get, options.pagesPath, rootId, signal)) }
  }

  async function runOnce(): Promise<SyncResult> {
    const started = options.now()
    status.lastAttemptAt = started
    controller = new AbortController()
    const signal = controller.signal
    let lastLog = started
    const onProgress = (progress: FetchProgress) => {
      const at = options.now()
      if (at - lastLog < progressEveryMs) return
      lastLog = at
      options.logger.info({ ...progress }, `sync: ${progress.phase} ${progress.done}/${progress.total}`)
    }
    options.logger.debug({}, 'sync: started')
    try {
      // The page size is learned every time: an operator may change WAGTAILAPI_LIMIT_MAX.
      const limitMax = await probeLimitMax(options.get, options.pagesPath, signal)
      const pages = await fetchTree({
        get: options.get,
        pagesPath: options.pagesPath,
        rewriteUrl: options.rewriteUrl,
        pageSize: limitMax,
        concurrency: options.concurrency,
        signal,
        onProgress,
      })
      dialect = await learnDialect(pages[0]?.id ?? 0, limitMax, signal)
      const candidate = buildSnapshot(pages, { version: (current?.version ?? 0) + 1, syncedAt: options.now(), dialect })
      const changed = candidate.fingerprint !== current?.fingerprint
      const previous = current
      // An unchanged tree keeps its snapshot (and every body rendered from it).
      if (changed) current = candidate
      status.lastSuccessAt = options.now()
      status.lastError = undefined
      status.consecutiveFailures = 0
      const durationMs = options.now() - started
      options.logger.info({ pages: pages.length, changed, version: current!.version, durationMs }, 'sync: done')
      if (changed) options.onSnapshot?.(candidate, previous, 'sync')
      return { ok: true, changed, pages: pages.length, durationMs }
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught))
      status.lastError = error.message
      status.consecutiveFailures++
      const durationMs = options.now() - started
      const code = isProxyError(error) ? error.code : error instanceof TreeInconsistentError ? 'SYNC_INCONSISTENT' : 'SYNC_FAILED'
      options.logger.warn(
        { err: error, code, failures: status.consecutiveFailures, keptVersion: current?.version, durationMs },
        'sync: failed; the last good snapshot keeps serving',
      )
      return { ok: false, error, durationMs }
    } finally {
      controller = undefined
    }
  }

  function schedule(result: SyncResult): void {
    if (stopped) return
    const delay = result.ok ? options.intervalMs : syncRetryDelay(status.consecutiveFailures, options.retryMaxMs, options.random)
    timer = timers.setTimeout(() => {
      timer = undefined
      void service.syncNow()
    }, delay)
  }

  const service: SyncService = {
    get current() {
      return current
    },
    get status() {
      return { ...status, running: running !== undefined }
    },
    adopt(snapshot) {
      if (current) return false
      current = snapshot
      dialect = snapshot.dialect
      options.onSnapshot?.(snapshot, undefined, 'storage')
      return true
    },
    start() {
      if (!stopped) return
      stopped = false
      void service.syncNow()
    },
    syncNow() {
      if (running) return running
      if (timer !== undefined) {
        timers.clearTimeout(timer)
        timer = undefined
      }
      running = runOnce().then((result) => {
        running = undefined
        schedule(result)
        return result
      })
      return running
    },
    async stop() {
      stopped = true
      if (timer !== undefined) timers.clearTimeout(timer)
      timer = undefined
      controller?.abort()
      await running
    },
  }
  return service
}
