/**
 * The delivery queue: one lane per purge target, so a target that is slow or down holds back only
 * its own purges. Keys are merged while a request is in flight, batched at the target's limit,
 * collapsed to `cms-pages` past a bound, and retried with backoff on what a retry can cure
 * (docs/cdn-purging.md#delivery-merging-batching-retries). Pure of Fastify: clock and timers are
 * passed in, so tests drive every wait by hand.
 * @module
 */
import type { LogSink } from '../observability/log-sink.js'
import { retryDelay } from '../backoff.js'
import type { Timers } from '../timers.js'
import { ALL_PAGES_KEY } from '../tree/surrogate-keys.js'
import type { PurgeAnswer, PurgeTarget, TargetName } from './purge-target.js'

export interface PurgeDelivery {
  /** Queue keys for every target; merged with keys not yet sent. swappedAt = ms epoch of the swap (for lag). */
  enqueue(keys: readonly string[], swappedAt: number): void
  /** Resolves when nothing is queued or in flight (tests and bench use it). */
  idle(): Promise<void>
  close(): Promise<void>
}

/** One purge request's end, for metrics (`cdn_purges_total` and its histograms). */
export interface PurgeReport {
  readonly target: TargetName
  readonly outcome: 'ok' | 'retried' | 'failed'
  readonly keys: number
  /** From the oldest swap among the keys to now. */
  readonly lagMs: number
}

/**
 * Distinct keys a lane holds before it purges everything instead: a tree-wide change (a move near
 * the root, a big import) names thousands of keys, and one `cms-pages` purge does the same work in
 * one request.
 */
export const MAX_PENDING_KEYS = 1_000
/** Longest wait between two attempts, whatever the backoff or the target's `Retry-After` says. */
export const RETRY_CAP_MS = 60_000

export interface PurgeDeliveryOptions {
  readonly targets: readonly PurgeTarget[]
  readonly logger: Pick<LogSink, 'info' | 'warn' | 'error'>
  readonly now: () => number
  readonly random: () => number
  readonly timers: Timers
  /** A batch is given up once its oldest key waited this long (CDN_MAX_AGE: every older copy has expired). */
  readonly giveUpAfterMs: number
  readonly report?: (report: PurgeReport) => void
  readonly maxPendingKeys?: number
  readonly retryCapMs?: number
}

interface Lane {
  readonly target: PurgeTarget
  /** Keys waiting for the next request, each with the earliest swap that asked for it. */
  pending: Map<string, number>
  running: Promise<void> | undefined
  /** The retry wait under way: its timer and how to end it early (close). */
  waiting: { handle: unknown; wake: () => void } | undefined
}

export function createPurgeDelivery(options: PurgeDeliveryOptions): PurgeDelivery {
  const { logger, now, timers } = options
  const maxPending = options.maxPendingKeys ?? MAX_PENDING_KEYS
  const retryCap = options.retryCapMs ?? RETRY_CAP_MS
  const lanes: Lane[] = options.targets.map((target) => ({ target, pending: new Map(), running: undefined, waiting: undefined }))
  const aborts = new AbortController()
  let idleWaiters: Array<() => void> = []
  let closed = false

  function report(target: PurgeTarget, outcome: PurgeReport['outcome'], keys: number, lagMs: number): void {
    try {
      options.report?.({ target: target.name, outcome, keys, lagMs })
    } catch (error) {
      logger.warn({ err: error }, 'cdn purge: a report listener threw')
    }
  }

  function merge(into: Map<string, number>, keys: Iterable<string>, swappedAt: number): void {
    for (const key of keys) {
      const known = into.get(key)
      if (known === undefined || swappedAt < known) into.set(key, swappedAt)
    }
  }

  /** Past the bound, or once everything is to be purged anyway, one key says it all. */
  function collapse(keys: Map<string, number>, bound: number): void {
    if (keys.size <= 1) return
    if (!keys.has(ALL_PAGES_KEY) && keys.size <= bound) return
    const since = oldestOf(keys)
    keys.clear()
    keys.set(ALL_PAGES_KEY, since)
  }

  /** Moves up to `room` pending keys into `batch`. */
  function take(lane: Lane, batch: Map<string, number>, room: number): void {
    for (const [key, swappedAt] of lane.pending) {
      if (batch.size >= room) break
      lane.pending.delete(key)
      merge(batch, [key], swappedAt)
    }
  }

  function sleep(lane: Lane, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        lane.waiting = undefined
        resolve()
      }
      lane.waiting = { handle: timers.setTimeout(wake, ms), wake }
    })
  }

  async function drain(lane: Lane): Promise<void> {
    const { target } = lane
    while (!closed && lane.pending.size > 0) {
      const batch = new Map<string, number>()
      take(lane, batch, target.maxKeys)
      for (let attempt = 1; !closed; attempt++) {
        let answer: PurgeAnswer
        try {
          answer = await target.purge([...batch.keys()], aborts.signal)
        } catch (error) {
          // A target promises never to reject; one that does is treated as a network failure.
          answer = { kind: 'retry', reason: String(error) }
        }
        if (closed) return
        const lagMs = Math.max(0, now() - oldestOf(batch))
        const where = { target: target.name, where: target.where, keys: batch.size, attempt, lagMs }
        if (answer.kind === 'ok') {
          logger.info(where, 'cdn purge: acknowledged')
          report(target, 'ok', batch.size, lagMs)
          break
        }
        if (answer.kind === 'fail') {
          logger.warn({ ...where, reason: answer.reason }, 'cdn purge: refused, not retried')
          report(target, 'failed', batch.size, lagMs)
          break
        }
        const backoff = retryDelay(attempt, retryCap, options.random)
        const delayMs = Math.min(retryCap, Math.max(backoff, answer.retryAfterMs ?? 0))
        if (lagMs + delayMs > options.giveUpAfterMs) {
          logger.warn({ ...where, reason: answer.reason }, 'cdn purge: given up, the cached copies expire by themselves now')
          report(target, 'failed', batch.size, lagMs)
          break
        }
        logger.warn({ ...where, reason: answer.reason, delayMs }, 'cdn purge: failed, retrying')
        report(target, 'retried', batch.size, lagMs)
        await sleep(lane, delayMs)
        if (closed) return
        // Keys that arrived meanwhile ride along, up to the limit; `cms-pages` replaces the rest.
        take(lane, batch, target.maxKeys)
        collapse(batch, target.maxKeys)
      }
    }
  }

  function start(lane: Lane): void {
    if (lane.running || closed) return
    lane.running = drain(lane)
      .catch((error: unknown) => logger.error({ err: error, target: lane.target.name }, 'cdn purge: delivery failed'))
      .finally(() => {
        lane.running = undefined
        // Keys may have arrived in the same turn the last request ended.
        if (!closed && lane.pending.size > 0) start(lane)
        else settleIdle()
      })
  }

  function isIdle(): boolean {
    return lanes.every((lane) => lane.running === undefined && (closed || lane.pending.size === 0))
  }

  function settleIdle(): void {
    if (!isIdle()) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  return {
    enqueue(keys, swappedAt) {
      if (closed || keys.length === 0) return
      try {
        for (const lane of lanes) {
          merge(lane.pending, keys, swappedAt)
          collapse(lane.pending, maxPending)
          start(lane)
        }
      } catch (error) {
        // Nothing on the sync path may fail because of a CDN.
        logger.error({ err: error }, 'cdn purge: could not queue keys')
      }
    },
    idle() {
      if (isIdle()) return Promise.resolve()
      return new Promise((resolve) => idleWaiters.push(resolve))
    },
    async close() {
      closed = true
      aborts.abort()
      for (const lane of lanes) {
        lane.pending.clear()
        if (lane.waiting) {
          timers.clearTimeout(lane.waiting.handle)
          lane.waiting.wake()
        }
      }
      await Promise.all(lanes.map((lane) => lane.running))
      settleIdle()
    },
  }
}

/** The earliest swap among `keys` (a loop: a tree-wide change may name more keys than a spread takes). */
function oldestOf(keys: ReadonlyMap<string, number>): number {
  let oldest = Infinity
  for (const swappedAt of keys.values()) if (swappedAt < oldest) oldest = swappedAt
  return oldest
}
