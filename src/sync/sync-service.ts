/**
 * Keeps the snapshot in step with the CMS: a full sync at start, then every `SYNC_INTERVAL` an
 * incremental one (the listing, and only the details it shows changed), and a full one again
 * every `FULL_SYNC_INTERVAL`. PURGE and webhook calls become `refresh()` requests, coalesced over
 * `REFRESH_DEBOUNCE` into one incremental sync that also re-fetches the pages they named.
 * A failed or inconsistent sync changes nothing readers see; it is retried with backoff while the
 * last good snapshot keeps serving. One sync runs at a time.
 *
 * With a budget (`SYNC_BUDGET`), the listing walk and the re-reading of details are a safety net
 * paced by what they cost the CMS (`safety-net.ts`): the walk reads one window at a time and
 * waits for its cost to pay off, a refresh cuts a walk in flight short (the walk is owed again),
 * and instead of a full sync every `FULL_SYNC_INTERVAL` the details are verified a few at a time.
 * @module
 */
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { LogSink } from '../observability/log-sink.js'
import { realTimers, type Timers } from '../timers.js'
import type { TwinLookup } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { buildCandidate, type BuildInput } from './build-candidate.js'
import { settleTranslations } from './learn-translations.js'
import { createCmsFacts } from './cms-facts.js'
import { createSyncCommit, windowsFor } from './commit-sync.js'
import { dialectOfTree, fetchSync, readTree, type FetchedTree, type FetchRequest, type FetchSyncDeps } from './fetch-sync.js'
import type { FetchProgress } from './fetch-tree.js'
import { NET_CONCURRENCY } from './plan-net.js'
import { planNextSync, type NextSync } from './plan-schedule.js'
import { fallsBackToFull, planBuild, planSync, type SyncPlan } from './plan-sync.js'
import { createRefreshQueue } from './refresh-queue.js'
import type { RefreshRequest } from './refresh-request.js'
import { createSafetyNet, type NetStatus, type SafetyNet } from './safety-net.js'
import type { SnapshotSource, SyncMode, SyncResult, SyncStatus } from './sync-outcome.js'
import type { UpstreamGet } from './upstream-port.js'

export type SyncLogger = Pick<LogSink, 'info' | 'warn' | 'debug'>

/** Re-exported: the options name it, and callers of the sync take it from here. */

export interface SyncServiceOptions {
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly concurrency: number
  /** SYNC_DERIVE_URLS: walks may read the listing without `html_url` (`walk-without-urls.ts`). */
  readonly deriveUrls?: boolean
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
  /** Pages other Sites' trees hold with the same bytes, stored once (`BuildOptions.twinOf`). */
  readonly twinOf?: TwinLookup
  /** `SYNC_BUDGET`: the share of one CMS worker the safety net may use; 0 or absent: unpaced. */
  readonly budget?: number
}

export type { NetStatus, SnapshotSource, SyncMode, SyncResult, SyncStatus }

export interface SyncService {
  readonly current: Snapshot | undefined
  readonly status: SyncStatus
  /** The safety net's progress under `SYNC_BUDGET`; `undefined` without a budget, or while the loop is stopped (a follower). */
  readonly net?: NetStatus | undefined
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
  // What the running sync's CMS requests count as (`SyncPlan.trafficClass`).
  let trafficClass: SyncPlan['trafficClass'] = 'sync'
  /** CMS time the running sync's requests took (their response times), ms. */
  let runCostMs = 0
  const get: UpstreamGet = async (pathAndQuery, signal) => {
    const started = options.now()
    try {
      return await options.get(pathAndQuery, signal, trafficClass)
    } finally {
      runCostMs += options.now() - started
    }
  }
  const queue = createRefreshQueue()
  const facts = createCmsFacts(get, options.pagesPath, options.deriveUrls === true)
  const commit = createSyncCommit({ queue, facts, logger: options.logger, now: options.now, pause, ...(options.onSnapshot ? { onSnapshot: options.onSnapshot } : {}) })
  const { state } = commit
  const fetchDeps: FetchSyncDeps = { get, pagesPath: options.pagesPath, rewriteUrl: options.rewriteUrl, concurrency: options.concurrency, pause, facts }
  const net: SafetyNet | undefined = (options.budget ?? 0) > 0
    ? createSafetyNet({
      budget: options.budget!, cycleMs: fullIntervalMs, intervalMs: options.intervalMs, get: options.get, pagesPath: options.pagesPath,
      rewriteUrl: options.rewriteUrl, now: options.now, timers, current: () => state.current, refresh: (request) => service.refresh(request), logger: options.logger,
    })
    : undefined
  /** The running sync is the net's listing walk; a refresh asked meanwhile cuts it short. */
  let walking = false
  /** When the CMS's page size and date orders were last asked (a full sync, or a walk under a budget). */
  let learnedAt = Number.NEGATIVE_INFINITY
  /** A walk in flight may be cut short for a refresh (not once it fell back to reading everything). */
  let preemptable = false
  let preempted = false
  let running: Promise<SyncResult> | undefined
  let controller: AbortController | undefined
  let timer: unknown
  let timerKind: NextSync['kind'] | undefined
  /** Until when the CMS asked not to be called (`Retry-After` on a failed sync); 0 when it did not. */
  let quietUntil = 0
  let stopped = true

  function progressLog(startedAt: number): (progress: FetchProgress) => void {
    let lastLog = startedAt
    return (progress) => {
      const at = options.now()
      if (at - lastLog < progressEveryMs) return
      lastLog = at
      options.logger.info({ ...progress }, `sync: ${progress.phase} ${progress.done}/${progress.total}`)
    }
  }

  /**
   * Plan (`plan-sync.ts`) → fetch (`fetch-sync.ts`) → build (`build-candidate.ts`) → translations
   * (`learn-translations.ts`) → commit (`commit-sync.ts`).
   */
  async function runOnce(requestedFull: boolean): Promise<SyncResult> {
    const startedAt = options.now()
    // Under a budget the details are verified a few at a time instead (`safety-net.ts`).
    const plan = planSync({
      requestedFull, asked: queue.take(), previous: state.current, now: startedAt, fullIntervalMs: net ? Number.POSITIVE_INFINITY : fullIntervalMs, deferFull: state.deferFull,
    })
    commit.started(startedAt)
    trafficClass = plan.trafficClass
    runCostMs = 0
    walking = net !== undefined && plan.trafficClass === 'sync' && plan.mode === 'incremental'
    preemptable = walking
    preempted = false
    const deps: FetchSyncDeps = walking ? { ...fetchDeps, concurrency: NET_CONCURRENCY } : fetchDeps
    // With no full sync but the first, a walk asks what a full sync would, once per FULL_SYNC_INTERVAL.
    const relearn = walking && startedAt - learnedAt >= fullIntervalMs
    if (plan.mode === 'full' || relearn) learnedAt = startedAt
    controller = new AbortController()
    const signal = controller.signal
    const onProgress = progressLog(startedAt)
    const request = (full: boolean): FetchRequest => ({ plan, full, relearn, previous: state.current, windows: windowsFor(state), signal, onProgress })
    const buildInput = (fetched: FetchedTree): BuildInput => ({
      previous: state.current, pages: fetched.tree.pages, dialect: fetched.dialect, startedAt, now: options.now, pause,
      ...(options.twinOf ? { twinOf: options.twinOf } : {}),
    })
    let mode = plan.mode
    let cutShort = false
    options.logger.info({ mode, requested: plan.requested.size }, 'sync: started')
    try {
      let fetched = await fetchSync(deps, request(mode === 'full'))
      let candidate: Snapshot
      try {
        candidate = await buildCandidate(planBuild(fetched.tree, state.current, fetched.dialect, mode), buildInput(fetched))
      } catch (error) {
        if (!fallsBackToFull(mode, error)) throw error
        options.logger.info({ reason: (error as Error).message }, 'sync: the incremental sync saw an inconsistent tree; reading everything')
        mode = 'full'
        // Reading everything is not the net's paced walk any more: at full speed, and not cut short.
        preemptable = false
        const tree = await readTree(fetchDeps, request(true), fetched.pageSize, fetched.withFields)
        fetched = { ...fetched, tree, dialect: dialectOfTree(fetched.dialect, tree, state.current, fetched.dialect.dateOrders) }
        candidate = await buildCandidate({ kind: 'build', full: true }, buildInput(fetched))
      }
      candidate = await settleTranslations(deps, { pageSize: fetched.pageSize, signal }, candidate, state.current)
      return await commit.succeeded({ mode, startedAt, tree: fetched.tree, candidate })
    } catch (caught) {
      // A walk cut short for a refresh failed nothing: it is owed again, and the refresh runs now.
      cutShort = preempted && !stopped
      if (cutShort) {
        const durationMs = options.now() - startedAt
        options.logger.info({ durationMs, cmsMs: Math.round(runCostMs) }, 'sync: a paced walk gave way to a refresh; it is owed again')
        return { ok: false, mode, error: caught as Error, code: 'SYNC_ABORTED', durationMs, preempted: true }
      }
      return commit.failed({ plan, mode, startedAt, caught })
    } finally {
      controller = undefined
      if (walking) net?.walkEnded(runCostMs, cutShort)
      walking = false
      preemptable = false
    }
  }

  function clearTimer(): void {
    if (timer !== undefined) timers.clearTimeout(timer)
    timer = undefined
    timerKind = undefined
  }

  function setTimer(kind: NextSync['kind'], delay: number): void {
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
    if (!result.ok && result.preempted) {
      setTimer('refresh', debounceMs)
      return
    }
    const next = planNextSync({
      result,
      hasSnapshot: state.current !== undefined,
      consecutiveFailures: state.status.consecutiveFailures,
      refreshPending: queue.pending.any,
      now: options.now(),
      random: options.random,
      intervalMs: options.intervalMs,
      debounceMs,
      retryMaxMs: options.retryMaxMs,
      unreadyRetryMaxMs,
      ...(net?.walkDueAt === undefined ? {} : { walkDueAt: net.walkDueAt }),
    })
    quietUntil = next.quietUntil
    setTimer(next.kind, next.delayMs)
  }

  const service: SyncService = {
    get current() {
      return state.current
    },
    get status() {
      return { ...state.status, running: running !== undefined }
    },
    get net() {
      // Only the instance that syncs runs the net (`cluster/`): a follower has none to show.
      return stopped ? undefined : net?.status
    },
    adopt: (snapshot) => commit.adopt(snapshot),
    receive: (snapshot) => commit.receive(snapshot),
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
        // The net verifies a snapshot: it starts once there is one.
        if (!stopped && state.current !== undefined) net?.start()
        if (!result.ok && result.preempted) {
          schedule(result)
          return result
        }
        options.onSyncEnd?.(result)
        schedule(result)
        return result
      })
      return running
    },
    refresh(request) {
      queue.add(request)
      options.logger.debug({ ids: request.ids?.length ?? 0, all: request.all === true, reason: request.reason }, 'sync: refresh requested')
      // A sync in flight picks the request up when it ends (`schedule`); a retry backoff is cut
      // short, unless the CMS asked for the wait: the retry then takes the request along. A paced
      // walk can take minutes: it is cut short so that the refresh is not kept waiting.
      if (preemptable && running && !preempted) {
        preempted = true
        controller?.abort()
      }
      if (stopped || running || timerKind === 'refresh' || options.now() < quietUntil) return
      setTimer('refresh', debounceMs)
    },
    async stop() {
      stopped = true
      clearTimer()
      controller?.abort()
      await Promise.all([running, net?.stop()])
    },
  }
  return service
}
