/**
 * Keeps the snapshot in step with the CMS: a full sync at start, then every `SYNC_INTERVAL` an
 * incremental one (the listing, and only the details it shows changed), and a full one again
 * every `FULL_SYNC_INTERVAL`. PURGE and webhook calls become `refresh()` requests, coalesced over
 * `REFRESH_DEBOUNCE` into one incremental sync that also re-fetches the pages they named.
 * A failed or inconsistent sync changes nothing readers see; it is retried with backoff while the
 * last good snapshot keeps serving. One sync runs at a time.
 * @module
 */
import { isProxyError } from '../errors.js'
import { realTimers, type Timers } from '../timers.js'
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import { buildSnapshotInSlices, patchSnapshotInSlices, TreeInconsistentError } from '../tree/build-snapshot.js'
import type { Dialect, Snapshot } from '../tree/snapshot.js'
import { syncRetryDelay } from './backoff.js'
import { parseRetryAfter } from '../upstream/retry-policy.js'
import { windowsToKeep, type FetchProgress, type ListingWindows } from './fetch-tree.js'
import { probeListingFields } from './listing-fields.js'
import type { RefreshReason } from './plan-refresh.js'
import { probeDialect, probeLimitMax } from './probe-dialect.js'
import type { RefreshRequest } from './refresh-request.js'
import { syncTree, type SyncedTree } from './sync-tree.js'
import type { UpstreamGet } from './upstream-port.js'
import type { LogSink } from '../observability/log-sink.js'

export type SyncLogger = Pick<LogSink, 'info' | 'warn' | 'debug'>

/** Re-exported: the options name it, and callers of the sync take it from here. */
export type { Timers }

export interface SyncServiceOptions {
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly concurrency: number
  readonly intervalMs: number
  /** Every this long, a sync fetches every detail again (body-only edits show in no listing). */
  readonly fullIntervalMs?: number
  /** Refresh requests arriving within this long are handled by one sync. */
  readonly debounceMs?: number
  readonly retryMaxMs: number
  /**
   * The backoff's cap while there is no snapshot to serve (default `UNREADY_RETRY_MAX_MS`, never
   * above `retryMaxMs`).
   */
  readonly unreadyRetryMaxMs?: number
  readonly logger: SyncLogger
  readonly now: () => number
  readonly random: () => number
  readonly timers?: Timers
  /** How often a long sync logs its progress. */
  readonly progressEveryMs?: number
  /**
   * Gives the event loop back between slices of a snapshot build (default: one `setImmediate`
   * turn), so requests never wait for a whole build.
   */
  readonly pause?: () => Promise<void>
  /**
   * Called after a snapshot with different content was swapped in: by a sync of this instance,
   * adopted from storage at start, or received from the instance that syncs (`peer`).
   */
  readonly onSnapshot?: (snapshot: Snapshot, previous: Snapshot | undefined, source: SnapshotSource) => void
  /** Called after every sync attempt, for metrics. */
  readonly onSyncEnd?: (result: SyncResult) => void
}

export type SnapshotSource = 'sync' | 'storage' | 'peer'

export type SyncMode = 'full' | 'incremental'

export type SyncResult =
  | {
    readonly ok: true
    readonly mode: SyncMode
    readonly changed: boolean
    readonly pages: number
    /** Details fetched: every page on a full sync, the changed ones on an incremental one. */
    readonly detailsFetched: number
    readonly reasons?: Readonly<Record<RefreshReason, number>>
    readonly durationMs: number
  }
  | {
    readonly ok: false
    readonly mode: SyncMode
    readonly error: Error
    /** The error catalogue's code (`SYNC_FAILED` for an error that has none). */
    readonly code: string
    readonly durationMs: number
    /** How long the CMS asked to be left alone (its `Retry-After`), in ms; absent when it did not say. */
    readonly retryAfterMs?: number
  }

export interface SyncStatus {
  readonly lastAttemptAt: number | undefined
  readonly lastSuccessAt: number | undefined
  readonly lastError: string | undefined
  /** The last failure's code (see `errors.ts`); `undefined` after a success. */
  readonly lastErrorCode?: string | undefined
  readonly consecutiveFailures: number
  readonly running: boolean
  readonly lastMode: SyncMode | undefined
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
  /**
   * Serves a snapshot another instance synced (read from Redis), when it differs from the current
   * one and is newer (higher version, or synced later).
   */
  receive(snapshot: Snapshot): boolean
  /** Runs a sync now, or joins the one running. Never throws: the outcome says what happened. */
  syncNow(options?: { readonly full?: boolean }): Promise<SyncResult>
  /** Asks for a sync soon (PURGE, webhook); requests within the debounce time share one. */
  refresh(request: RefreshRequest): void
  /** Stops the loop and cancels a sync in flight; `start()` resumes it. */
  stop(): Promise<void>
}

/**
 * Longest wait between retries while the instance has no snapshot (it answers 503 to every
 * read and `/readyz` is 503). Containers usually start together: an instance started before the
 * CMS must serve within seconds of it coming up, not after a backoff grown to `SYNC_RETRY_MAX`.
 * The cost is one failing request (the page-size probe) every 2.5 to 5 s, from the one instance
 * that syncs; the long backoff protects a CMS from replicas that already serve a snapshot.
 */
export const UNREADY_RETRY_MAX_MS = 5000

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

export function createSyncService(options: SyncServiceOptions): SyncService {
  const timers = options.timers ?? realTimers
  const progressEveryMs = options.progressEveryMs ?? 5000
  const fullIntervalMs = options.fullIntervalMs ?? Number.POSITIVE_INFINITY
  const debounceMs = options.debounceMs ?? 0
  const unreadyRetryMaxMs = options.unreadyRetryMaxMs ?? UNREADY_RETRY_MAX_MS
  const pause = options.pause ?? nextTurn
  let current: Snapshot | undefined
  let dialect: Dialect | undefined
  /** Learned from the CMS once per process; `undefined` = not probed yet. */
  let withFields: boolean | undefined
  let running: Promise<SyncResult> | undefined
  /** The next sync is incremental even if a full one is due (see the failure path). */
  let deferFull = false
  /** The last pass's listing windows and the snapshot they describe (`fetchListingPass`). */
  let windows: { readonly of: Snapshot; readonly windows: ListingWindows } | undefined
  let controller: AbortController | undefined
  let timer: unknown
  let timerKind: 'interval' | 'refresh' | undefined
  /** Until when the CMS asked not to be called (`Retry-After` on a failed sync); 0 when it did not. */
  let quietUntil = 0
  let stopped = true
  /** What refresh requests asked for since the last sync; `listing`: one asked for a listing pass. */
  const pending = { ids: new Set<number>(), all: false, any: false, listing: false }
  // What the running sync's CMS requests count as: a PURGE or webhook's refresh, or the schedule's.
  let trafficClass: 'sync' | 'refresh' = 'sync'
  const get: UpstreamGet = (pathAndQuery, signal) => options.get(pathAndQuery, signal, trafficClass)
  const status = {
    lastAttemptAt: undefined as number | undefined,
    lastSuccessAt: undefined as number | undefined,
    lastError: undefined as string | undefined,
    lastErrorCode: undefined as string | undefined,
    consecutiveFailures: 0,
    lastMode: undefined as SyncMode | undefined,
  }

  async function learnDialect(rootId: number, limitMax: number | null, signal: AbortSignal): Promise<Dialect> {
    if (dialect && dialect.limitMax === limitMax) return dialect
    if (dialect) return { ...dialect, limitMax }
    return { limitMax, ...(await probeDialect(get, options.pagesPath, rootId, signal)) }
  }

  /** The wait a failing CMS asked for with its `Retry-After` (see `badStatusError`), in ms. */
  function askedToWait(error: Error): number | undefined {
    if (!isProxyError(error, 'UPSTREAM_BAD_STATUS')) return undefined
    return parseRetryAfter(error.details?.['retryAfter'] as string | string[] | undefined, options.now)
  }

  function isPageSizeRefusal(error: unknown): boolean {
    return isProxyError(error, 'UPSTREAM_BAD_STATUS') && (error.details as { status?: number } | undefined)?.status === 400
  }

  async function runOnce(requestedFull: boolean): Promise<SyncResult> {
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
    const requested = new Set(pending.ids)
    const fullDue = started - (current?.fullSyncedAt ?? 0) >= fullIntervalMs && !deferFull
    deferFull = false
    const full = requestedFull || pending.all || !current || fullDue
    // Only PURGEs of known pages asked: they may be refreshed without a listing pass.
    const inPlace = pending.any && !pending.listing
    trafficClass = pending.any ? 'refresh' : 'sync'
    const requestedListing = pending.listing
    pending.ids.clear()
    pending.all = false
    pending.any = false
    pending.listing = false
    let mode: SyncMode = full ? 'full' : 'incremental'
    options.logger.info({ mode, requested: requested.size }, 'sync: started')
    try {
      // A full sync asks for the page size again (an operator may change WAGTAILAPI_LIMIT_MAX);
      // an incremental one reuses it, and learns it again only if the CMS refuses it.
      let limitMax = mode === 'full' || dialect === undefined ? await probeLimitMax(get, options.pagesPath, signal) : dialect.limitMax
      withFields ??= await probeListingFields(get, options.pagesPath, signal)
      const read = async (asFull: boolean) => syncTree({
        get,
        pagesPath: options.pagesPath,
        rewriteUrl: options.rewriteUrl,
        pageSize: limitMax,
        concurrency: options.concurrency,
        signal,
        onProgress,
        pause,
        previous: current,
        full: asFull,
        requested,
        inPlace,
        withFields: withFields ?? false,
        ...(windows !== undefined && windows.of === current ? { windows: windows.windows } : {}),
      })
      let tree: SyncedTree
      try {
        tree = await read(mode === 'full')
      } catch (error) {
        if (mode === 'full' || !isPageSizeRefusal(error)) throw error
        limitMax = await probeLimitMax(get, options.pagesPath, signal)
        tree = await read(false)
      }
      dialect = await learnDialect(tree.pages[0]?.id ?? 0, limitMax, signal)
      const buildOptions = (asFull: boolean) => ({
        version: (current?.version ?? 0) + 1,
        syncedAt: options.now(),
        fullSyncedAt: asFull ? started : current!.fullSyncedAt,
        dialect: dialect!,
      })
      const build = (pages: typeof tree.pages, asFull: boolean) => buildSnapshotInSlices(pages, buildOptions(asFull), pause)
      let candidate: Snapshot
      try {
        // Nothing the CMS showed differs from the current snapshot: at 100,000 pages a build that
        // proves it costs most of a listing pass's CPU, for every periodic pass and PURGE.
        const same = tree.unchanged && current !== undefined && JSON.stringify(current.dialect) === JSON.stringify(dialect)
        candidate = same
          ? current!
          : tree.replaced
            // Pages refreshed in place keep their places: swap their records in, build no tree.
            ? await patchSnapshotInSlices(current!, tree.replaced, buildOptions(false), pause)
            : await build(tree.pages, mode === 'full')
      } catch (error) {
        // Parent links carried over from the last snapshot that no longer form a tree mean the
        // listing did not show some change (a move of a page without a URL): read everything.
        if (mode === 'full' || !(error instanceof TreeInconsistentError)) throw error
        options.logger.info({ reason: error.message }, 'sync: the incremental sync saw an inconsistent tree; reading everything')
        mode = 'full'
        tree = await read(true)
        candidate = await build(tree.pages, true)
      }
      const changed = candidate.fingerprint !== current?.fingerprint
      const previous = current
      // An unchanged tree keeps its snapshot (and every body rendered from it), unless a full
      // sync must record that every detail was checked.
      const kept = await windowsToKeep(tree.listing, changed ? candidate : current!, pause)
      if (changed) current = candidate
      else if (mode === 'full' && current) current = { ...current, fullSyncedAt: started }
      windows = { of: current!, windows: kept }
      status.lastSuccessAt = options.now()
      status.lastError = undefined
      status.lastErrorCode = undefined
      status.consecutiveFailures = 0
      status.lastMode = mode
      const durationMs = options.now() - started
      options.logger.info(
        { mode, ...(tree.replaced ? { inPlace: true } : {}), pages: tree.pages.length, detailsFetched: tree.detailsFetched, removed: tree.removed, reasons: tree.reasons, changed, version: current!.version, durationMs },
        'sync: done',
      )
      if (changed) options.onSnapshot?.(candidate, previous, 'sync')
      return {
        ok: true, mode, changed, pages: tree.pages.length, detailsFetched: tree.detailsFetched,
        ...(tree.reasons ? { reasons: tree.reasons } : {}), durationMs,
      }
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught))
      // What was asked for is still owed: the retry fetches it.
      for (const id of requested) pending.ids.add(id)
      if (requestedFull) pending.all = true
      // A refresh in place that failed is retried with a listing pass, which settles any doubt.
      if (requestedListing || inPlace) pending.listing = true
      const code = isProxyError(error) ? error.code : error instanceof TreeInconsistentError ? 'SYNC_INCONSISTENT' : 'SYNC_FAILED'
      status.lastError = error.message
      status.lastErrorCode = code
      // A full sync that met an edit in progress (a page changed between its listing and its
      // detail) would meet the next one too while editors work: the retry is incremental, so
      // edits keep arriving, and the full sync is tried again at the next interval.
      if (mode === 'full' && current && code === 'SYNC_INCONSISTENT' && !requestedFull && !pending.all) deferFull = true
      status.consecutiveFailures++
      status.lastMode = mode
      const durationMs = options.now() - started
      const retryAfterMs = askedToWait(error)
      options.logger.warn(
        { err: error, code, mode, failures: status.consecutiveFailures, keptVersion: current?.version, durationMs, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
        'sync: failed; the last good snapshot keeps serving',
      )
      return { ok: false, mode, error, code, durationMs, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
    } finally {
      controller = undefined
    }
  }

  function clearTimer(): void {
    if (timer !== undefined) timers.clearTimeout(timer)
    timer = undefined
    timerKind = undefined
  }

  function setTimer(kind: 'interval' | 'refresh', delay: number): void {
    clearTimer()
    timerKind = kind
    timer = timers.setTimeout(() => {
      timer = undefined
      timerKind = undefined
      void service.syncNow()
    }, delay)
  }

  function schedule(result: SyncResult): void {
    if (stopped) return
    if (!result.ok) {
      // A CMS that says when to come back is believed, up to SYNC_RETRY_MAX: a gateway's
      // `Retry-After: 86400` must not stop the syncs for a day. Without a snapshot the backoff
      // stays short (`UNREADY_RETRY_MAX_MS`); it grows from where the failures count once one is
      // served (adopted, received from the leader).
      const cap = current === undefined ? Math.min(unreadyRetryMaxMs, options.retryMaxMs) : options.retryMaxMs
      const backoff = syncRetryDelay(status.consecutiveFailures, cap, options.random)
      const delay = Math.max(backoff, Math.min(result.retryAfterMs ?? 0, options.retryMaxMs))
      quietUntil = result.retryAfterMs === undefined ? 0 : options.now() + delay
      return setTimer('interval', delay)
    }
    quietUntil = 0
    // Requests that came in during the sync are handled now, not at the next interval.
    if (pending.any) return setTimer('refresh', debounceMs)
    setTimer('interval', options.intervalMs)
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
    receive(snapshot) {
      if (current && (snapshot.fingerprint === current.fingerprint || (snapshot.version <= current.version && snapshot.syncedAt <= current.syncedAt))) {
        return false
      }
      const previous = current
      current = snapshot
      dialect = snapshot.dialect
      options.onSnapshot?.(snapshot, previous, 'peer')
      return true
    },
    start() {
      if (!stopped) return
      stopped = false
      void service.syncNow()
    },
    syncNow(syncOptions = {}) {
      if (running) return running
      clearTimer()
      running = runOnce(syncOptions.full ?? false).then((result) => {
        running = undefined
        options.onSyncEnd?.(result)
        schedule(result)
        return result
      })
      return running
    },
    refresh(request) {
      for (const id of request.ids ?? []) pending.ids.add(id)
      if (request.all) pending.all = true
      // A request without ids, or one that asks for it, gets a listing pass.
      if (request.listing || !request.ids?.length) pending.listing = true
      pending.any = true
      options.logger.debug({ ids: request.ids?.length ?? 0, all: request.all === true, reason: request.reason }, 'sync: refresh requested')
      // A sync in flight picks the request up when it ends (`schedule`); a retry backoff is cut
      // short, unless the CMS asked for the wait: the retry then takes the request along.
      if (stopped || running || timerKind === 'refresh' || options.now() < quietUntil) return
      setTimer('refresh', debounceMs)
    },
    async stop() {
      stopped = true
      clearTimer()
      controller?.abort()
      await running
    },
  }
  return service
}
