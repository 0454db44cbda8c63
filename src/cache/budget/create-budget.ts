/**
 * Puts the read-through budget together from its parts (docs/operations.md, "The CMS budget"): a share per
 * client, the concurrency gate, and the CMS's token bucket (the cluster's with Redis), plus the
 * rate-limited warning an operator reads when a client goes over its share.
 * @module
 */
import type { RedisClient } from '../stores/redis-client.js'
import type { Timers } from '../../timers.js'
import { createConcurrencyGate } from './adaptive-limit.js'
import { createReadThroughBudget, type ReadThroughBudget, type RefusalReason } from './read-through-budget.js'
import { createSharedBucket, type BucketScope } from './shared-bucket.js'
import { createLocalBuckets } from './token-bucket.js'

export interface BudgetSettings {
  readonly ratePerSecond: number
  readonly burst: number
  readonly concurrency: number
  readonly adaptive: boolean
  readonly queueTimeoutMs: number
  readonly clientRatePerSecond: number
  readonly clientBurst: number
}

export interface BudgetLogger {
  warn(details: object, message: string): void
  info(details: object, message: string): void
}

export interface CreateBudgetOptions {
  readonly settings: BudgetSettings
  /** With Redis: the cluster's bucket lives at `key`. */
  readonly redis?: { readonly client: RedisClient; readonly key: string; isUp(): boolean }
  readonly now: () => number
  readonly random: () => number
  readonly timers: Timers
  readonly logger: BudgetLogger
  readonly onRefused?: (reason: RefusalReason) => void
  readonly onScopeChange?: (scope: BucketScope) => void
}

/** One warning per client per this long, however many requests it keeps sending. */
const CLIENT_WARNING_EVERY_MS = 60_000
/** Clients whose last warning is remembered; a flood of addresses cannot grow it further. */
const WARNED_CLIENTS_MAX = 1_000
/** Most requests waiting for a place, per place: past it a miss is refused at once. */
const QUEUE_PER_PLACE = 8
/** Clients whose share is tracked; the least recently seen is forgotten first. */
const CLIENTS_MAX = 10_000

export function createBudget(options: CreateBudgetOptions): ReadThroughBudget {
  const { settings, now, logger } = options
  const warnedAt = new Map<string, number>()

  function warnOverShare(client: string): void {
    const at = now()
    const last = warnedAt.get(client)
    if (last !== undefined && at - last < CLIENT_WARNING_EVERY_MS) return
    warnedAt.delete(client)
    warnedAt.set(client, at)
    if (warnedAt.size > WARNED_CLIENTS_MAX) warnedAt.delete(warnedAt.keys().next().value!)
    logger.warn(
      { client, clientRate: settings.clientRatePerSecond, clientBurst: settings.clientBurst },
      'read-through: a client is over its share of the CMS budget; its misses get 429 (logged once a minute per client)',
    )
  }

  const cms = createSharedBucket({
    ...(options.redis ? { redis: options.redis.client } : {}),
    key: options.redis?.key ?? 'local',
    limits: { ratePerSecond: settings.ratePerSecond, burst: settings.burst },
    now,
    isUp: () => options.redis?.isUp() ?? false,
    onScopeChange: (scope, error) => {
      if (scope === 'local') {
        logger.warn(
          { err: error },
          'read-through budget: Redis cannot be reached; this instance spends a budget of its own (READ_THROUGH_RATE) until it is back',
        )
      } else {
        logger.info({}, 'read-through budget: shared through Redis again')
      }
      options.onScopeChange?.(scope)
    },
  })

  return createReadThroughBudget({
    clients: createLocalBuckets({ ratePerSecond: settings.clientRatePerSecond, burst: settings.clientBurst }, now, CLIENTS_MAX),
    gate: createConcurrencyGate({
      max: settings.concurrency,
      adaptive: settings.adaptive,
      queueTimeoutMs: settings.queueTimeoutMs,
      maxQueue: settings.concurrency * QUEUE_PER_PLACE,
      timers: options.timers,
    }),
    cms,
    busyRetryAfterMs: 1000,
    // The same bounded wait a miss may spend queueing for a place (docs/operations.md, "The CMS budget").
    clientRefusalDelayMs: settings.queueTimeoutMs,
    timers: options.timers,
    random: options.random,
    now,
    onRefused: (reason, client) => {
      if (reason === 'client_share' && client !== undefined) warnOverShare(client)
      options.onRefused?.(reason)
    },
  })
}
