/**
 * The operations part: metrics, PURGE, the refresh webhook and the health probes.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/load-config.js'
import { mountOf } from '../config/api-mount.js'
import { createSiteOfHost } from '../http/site-of-host.js'
import type { ScopePurge } from './endpoint-purge.js'
import { createPurgeAccess } from '../http/purge-access.js'
import { registerHealthRoutes } from '../http/routes/health.js'
import { registerMetricsRoute } from '../http/routes/metrics.js'
import { registerPurgeRoute } from '../http/routes/purge.js'
import { registerRefreshWebhook } from '../http/routes/refresh-webhook.js'
import { configuredTargets } from '../cdn/cdn-purger.js'
import { createMetrics, type Metrics } from '../observability/metrics.js'
import type { PrivateApiPaths } from './private-apis.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import type { RefreshRequest } from '../sync/refresh-request.js'
import type { SyncService } from '../sync/sync-service.js'
import type { CacheParts } from './caches.js'

export interface OperationsOptions {
  readonly config: Config
  readonly sync: SyncService
  readonly caches: CacheParts
  readonly cluster: ClusterCoordinator | undefined
  readonly requestRefresh: (request: RefreshRequest) => void
  /** A PURGE of one of the router's other endpoints or the CMS's other Sites (`endpoint-purge.ts`). */
  readonly purgeScope: ScopePurge
  readonly events: ShieldEvents
  readonly now: () => number
  readonly privateApis: PrivateApiPaths
}

/** Metrics only listen: every number comes from an event or is read from its source at scrape. */
export function composeMetrics(options: OperationsOptions): Metrics {
  const { sync, cluster, events } = options
  const { memoryTier, shared, budget } = options.caches
  return createMetrics({
    events,
    tiers: [
      { name: 'memory', events: memoryTier, entries: () => memoryTier.entries, bytes: () => memoryTier.bytes },
      ...(shared ? [{ name: 'redis' as const, events: shared.store }] : []),
    ],
    snapshot: () => sync.current,
    ...(shared ? { redis: { up: () => shared.isUp() } } : {}),
    ...(cluster ? { role: () => cluster.role } : {}),
    budget: () => budget.state(),
    now: options.now,
    cdnTargets: configuredTargets(options.config),
    talliedMetrics: options.privateApis.talliedMetrics === 'private',
    privateApis: options.privateApis,
  })
}

export function registerOperations(app: FastifyInstance, options: OperationsOptions, metrics: Metrics): void {
  const { config, sync, cluster, requestRefresh, events } = options
  const { shared, budget } = options.caches
  registerPurgeRoute(app, {
    snapshot: () => sync.current,
    requestRefresh,
    mount: mountOf(config),
    purgeEndpoint: options.purgeScope.endpoint,
    ...(config.sites.length > 0 ? { sites: { of: createSiteOfHost(config.sites), all: config.sites, purge: options.purgeScope.site } } : {}),
    access: createPurgeAccess({ allow: config.purgeAllow, ...(config.purgeToken ? { token: config.purgeToken } : {}) }),
    logger: app.log,
    onPurge: (result, target) => events.emit('purge', { result, target }),
  })
  if (config.refreshToken !== undefined) {
    registerRefreshWebhook(app, { token: config.refreshToken, requestRefresh, logger: app.log, onWebhook: (result) => events.emit('webhook', { result }) })
  }
  registerMetricsRoute(app, metrics)
  registerHealthRoutes(app, {
    sync,
    now: options.now,
    ...(shared ? { redis: { up: () => shared.isUp(), errors: () => shared.store.errors } } : {}),
    ...(cluster ? { role: () => cluster.role, confirmedAt: () => cluster.confirmedAt } : {}),
    budget: () => budget.state(),
  })
}
