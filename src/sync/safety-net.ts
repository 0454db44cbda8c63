/**
 * The sync's safety net under `SYNC_BUDGET`: what it spent, when the listing walk is due next,
 * and the rolling verification that re-reads every page's detail within `FULL_SYNC_INTERVAL`, a
 * few pages at a time, oldest verified first, paced by what each step cost the CMS (`plan-net.ts`).
 * It runs while the sync loop does (only on the instance that syncs: `cluster/`); a detail found
 * different is refreshed as a PURGE of its page would be, outside the budget.
 * @module
 */
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { LogSink } from '../observability/log-sink.js'
import type { Timers } from '../timers.js'
import type { Snapshot } from '../tree/snapshot.js'
import { idleDelayMs, pickDue, verifyDelayMs, VERIFY_BATCH, walkDelayMs, IDLE_RECHECK_MS } from './plan-net.js'
import type { RefreshRequest } from './refresh-request.js'
import type { UpstreamGet } from './upstream-port.js'
import { verifyDetails } from './verify-details.js'
import { createVerifyLedger } from './verify-ledger.js'

/** What `/readyz` and the metrics show of the net. */
export interface NetStatus {
  /** `SYNC_BUDGET`, a fraction of one CMS worker. */
  readonly budget: number
  /** When the last listing walk ended (ms since the epoch); `undefined` before the first. */
  readonly lastWalkEndedAt: number | undefined
  /** When the next walk may start (the pacing's choice); `undefined` before the first walk ended. */
  readonly nextWalkAt: number | undefined
  /** When the least recently verified page was read; `undefined` with no snapshot. */
  readonly oldestVerifiedAt: number | undefined
  /** CMS time spent by the walks and by the verification since the net last started, ms. */
  readonly walkCmsMs: number
  readonly verifyCmsMs: number
  /** When the net started on this instance (ms since the epoch). */
  readonly since: number
}

export interface SafetyNetOptions {
  readonly budget: number
  /** `FULL_SYNC_INTERVAL`: each page is read again at most this often. */
  readonly cycleMs: number
  readonly intervalMs: number
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly now: () => number
  readonly timers: Timers
  readonly current: () => Snapshot | undefined
  readonly refresh: (request: RefreshRequest) => void
  readonly logger: Pick<LogSink, 'info' | 'warn' | 'debug'>
}

export interface SafetyNet {
  readonly status: NetStatus
  /** When the next walk may start; `undefined` before the first walk (the interval then). */
  readonly walkDueAt: number | undefined
  /** A walk ended (or was cut short by a refresh) having cost `costMs` of CMS time. */
  walkEnded(costMs: number, preempted: boolean): void
  start(): void
  stop(): Promise<void>
  /** Runs one verification step now (tests; the loop runs them on its own). */
  step(): Promise<void>
}

export function createSafetyNet(options: SafetyNetOptions): SafetyNet {
  const { timers, now } = options
  const ledger = createVerifyLedger()
  let tracked: Snapshot | undefined
  let walkCmsMs = 0
  let verifyCmsMs = 0
  let since = now()
  let lastWalkEndedAt: number | undefined
  let walkDueAt: number | undefined
  let timer: unknown
  let stepping: Promise<void> | undefined
  let controller: AbortController | undefined
  let stopped = true

  const holds = (id: number): boolean => tracked?.byId.get(id) !== undefined

  function trackCurrent(): Snapshot | undefined {
    const snapshot = options.current()
    if (snapshot !== undefined && snapshot !== tracked) {
      ledger.track(snapshot, tracked)
      tracked = snapshot
    }
    return snapshot
  }

  /** One step: a few due pages read, or nothing due; returns how long to wait before the next. */
  async function runStep(): Promise<number> {
    const snapshot = trackCurrent()
    if (snapshot === undefined) return IDLE_RECHECK_MS
    const pick = pickDue({ order: ledger.entries(), holds, now: now(), cycleMs: options.cycleMs, batch: VERIFY_BATCH })
    ledger.forget(pick.gone)
    if (pick.due.length === 0) return idleDelayMs(pick.nextDueAt, now())
    let costMs = 0
    controller = new AbortController()
    try {
      const step = await verifyDetails(
        { get: options.get, pagesPath: options.pagesPath, rewriteUrl: options.rewriteUrl, now, spend: (ms) => (costMs += ms) },
        snapshot, pick.due, controller.signal,
      )
      ledger.verified(step.checked, now())
      if (step.differing.length > 0) {
        options.logger.info({ ids: step.differing.slice(0, 20), count: step.differing.length }, 'sync: the verification found details that changed unannounced')
        options.refresh({ ids: step.differing, reason: 'verify' })
      }
      return verifyDelayMs(costMs, options.budget)
    } catch (error) {
      if (stopped) return IDLE_RECHECK_MS
      options.logger.warn({ err: error }, 'sync: a verification step failed; it is tried again later')
      return Math.max(verifyDelayMs(costMs, options.budget), IDLE_RECHECK_MS)
    } finally {
      verifyCmsMs += costMs
      controller = undefined
    }
  }

  function schedule(delayMs: number): void {
    if (stopped) return
    timer = timers.setTimeout(() => {
      timer = undefined
      void net.step()
    }, delayMs)
  }

  const net: SafetyNet = {
    get status() {
      trackCurrent()
      return {
        budget: options.budget, lastWalkEndedAt, nextWalkAt: walkDueAt, oldestVerifiedAt: tracked === undefined ? undefined : ledger.oldest(holds), walkCmsMs, verifyCmsMs, since,
      }
    },
    get walkDueAt() {
      return walkDueAt
    },
    walkEnded(costMs, preempted) {
      walkCmsMs += costMs
      const at = now()
      if (!preempted) lastWalkEndedAt = at
      walkDueAt = at + walkDelayMs({ intervalMs: options.intervalMs, costMs, budget: options.budget, preempted })
    },
    start() {
      if (!stopped) return
      stopped = false
      // What it spends is counted from here: an instance that syncs again after following starts over.
      since = now()
      walkCmsMs = 0
      verifyCmsMs = 0
      schedule(0)
    },
    async stop() {
      stopped = true
      if (timer !== undefined) timers.clearTimeout(timer)
      timer = undefined
      controller?.abort()
      await stepping
    },
    step() {
      if (stepping) return stepping
      if (timer !== undefined) timers.clearTimeout(timer)
      timer = undefined
      stepping = runStep()
        .catch((error: unknown) => {
          options.logger.warn({ err: error }, 'sync: a verification step failed; it is tried again later')
          return IDLE_RECHECK_MS
        })
        .then((delayMs) => {
          stepping = undefined
          schedule(delayMs)
        })
      return stepping
    },
  }
  return net
}
