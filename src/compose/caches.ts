/**
 * The caches part: the memory tier, Redis when configured (shared tier, flight, budget), the
 * read-through budget and the read-through cache in front of the CMS (`docs/architecture.md`).
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import { createBudget } from '../cache/budget/create-budget.js'
import type { ReadThroughBudget } from '../cache/budget/read-through-budget.js'
import { createReadThrough, type ReadThrough } from '../cache/read-through.js'
import { createSharedTier, type SharedTier } from '../cache/shared-tier.js'
import { createMemoryStore, type MemoryStore } from '../cache/stores/memory-store.js'
import type { Config } from '../config/load-config.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import { toStoredAnswer } from '../cache/read-through-loader.js'
import { createEndpointGenerations, type EndpointGenerations } from '../cache/endpoint-generations.js'
import type { Clock } from './clock.js'
import type { UpstreamParts } from './upstream.js'

export interface CacheParts {
  readonly memoryTier: MemoryStore
  /** Redis, when configured. */
  readonly shared: SharedTier | undefined
  readonly budget: ReadThroughBudget
  readonly readThrough: ReadThrough
  readonly endpointGenerations: EndpointGenerations
}

export interface CachesOptions {
  readonly config: Config
  readonly upstream: Pick<UpstreamParts, 'wagtail' | 'rewriteUrl'>
  readonly logger: FastifyBaseLogger
  readonly events: ShieldEvents
  readonly clock: Clock
}

export function composeCaches(options: CachesOptions): CacheParts {
  const { config, logger, events, clock } = options
  const { now, random } = clock
  const memoryTier = createMemoryStore({ maxBytes: config.cacheMaxBytes, now })
  const shared = createSharedTier(config, logger, now)
  const budget = createBudget({
    settings: {
      ratePerSecond: config.readThroughRate,
      burst: config.readThroughBurst,
      concurrency: config.readThroughConcurrency,
      adaptive: config.readThroughAdaptive,
      queueTimeoutMs: config.readThroughQueueTimeoutMs,
      clientRatePerSecond: config.readThroughClientRate,
      clientBurst: config.readThroughClientBurst,
    },
    ...(shared ? { redis: { client: shared.client, key: `${config.redisPrefix}budget:read-through`, isUp: () => shared.isUp() } } : {}),
    now,
    random,
    timers: clock.timers,
    logger,
    onRefused: (reason) => events.emit('budget', { reason }),
    onScopeChange: (scope) => events.emit('budgetScope', { scope }),
  })
  const { wagtail, rewriteUrl } = options.upstream
  const readThrough = createReadThrough({
    budget,
    tiers: shared ? [memoryTier, shared.store] : [memoryTier],
    ...(shared ? { sharedFlight: shared.flight } : {}),
    policy: {
      ttlMs: config.cacheTtlMs,
      negativeTtlMs: config.cacheNegativeTtlMs,
      staleWhileRevalidateMs: config.cacheStaleWhileRevalidateMs,
      staleIfErrorMs: config.cacheStaleIfErrorMs,
      jitter: config.cacheTtlJitterPercent / 100,
    },
    now,
    random,
    logger,
    load: async (relative) => toStoredAnswer(await wagtail.raw(relative), rewriteUrl, now(), `GET ${wagtail.apiPath}${relative}`),
  })
  return { memoryTier, shared, budget, readThrough, endpointGenerations: createEndpointGenerations({ ...clock, shared: shared !== undefined }) }
}
