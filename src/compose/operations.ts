/**
 * The operations part: metrics, PURGE, the refresh webhook and the health probes.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/load-config.js'
import { mountOf } from '../config/api-mount.js'
import { createSiteOfHost } from '../http/site-of-host.js'
import type { ScopePurge } from './endpoint-purge.js'
import type { SiteCore } from './site-core.js'
import { createPurgeAccess } from '../http/purge-access.js'
import { registerHealthRoutes } from '../http/routes/health.js'
import { registerMetricsRoute } from '../http/routes/metrics.js'
import { registerPurgeRoute, type PurgeRouteOptions } from '../http/routes/purge.js'
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
  /** The default Site's tree, and the other Sites' (SITES). */
  readonly core: SiteCore
  readonly others: readonly SiteCore[]
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
    ...(options.others.length > 0 ? { siteSnapshots: () => options.others.map((other) => [other.site!, other.sync.current] as const) } : {}),
    ...(shared ? { redis: { up: () => shared.isUp() } } : {}),
    ...(cluster ? { role: () => cluster.role } : {}),
    budget: () => budget.state(),
    net: () => sync.net,
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
    ...(options.others.length > 0 ? { otherTrees: otherTreesOf(config, options.others) } : {}),
    access: createPurgeAccess({ allow: config.purgeAllow, ...(config.purgeToken ? { token: config.purgeToken } : {}) }),
    logger: app.log,
    onPurge: (result, target) => events.emit('purge', { result, target }),
  })
  if (config.refreshToken !== undefined) {
    const refreshEvery = refreshAcrossTrees(options.core, options.others)
    registerRefreshWebhook(app, { token: config.refreshToken, requestRefresh: refreshEvery, logger: app.log, onWebhook: (result) => events.emit('webhook', { result }) })
  }
  registerMetricsRoute(app, metrics)
  registerHealthRoutes(app, {
    sync,
    others: options.others.map((other) => ({ site: other.site!, sync: other.sync })),
    now: options.now,
    ...(shared ? { redis: { up: () => shared.isUp(), errors: () => shared.store.errors } } : {}),
    ...(cluster ? { role: () => cluster.role, confirmedAt: () => cluster.confirmedAt } : {}),
    budget: () => budget.state(),
  })
}

/** PURGEs naming another Site's Host go to its tree (`routes/purge.ts`). */
function otherTreesOf(config: Config, others: readonly SiteCore[]): NonNullable<PurgeRouteOptions['otherTrees']> {
  const siteOf = createSiteOfHost(config.sites)
  const trees = new Map(others.map((other) => [other.site!, { snapshot: () => other.sync.current, requestRefresh: other.requestRefresh }]))
  return {
    of: (host) => {
      const site = siteOf(host)
      return site === undefined ? undefined : trees.get(site)
    },
    all: [...trees.values()],
  }
}

/**
 * The webhook names pages, not Sites: each id goes to the tree that holds it (the default Site's
 * when none does: a new page), and a listing pass or a whole refresh to every tree.
 */
function refreshAcrossTrees(core: SiteCore, others: readonly SiteCore[]): (request: RefreshRequest) => void {
  if (others.length === 0) return core.requestRefresh
  const cores = [core, ...others]
  return (request) => {
    if (request.ids === undefined) {
      for (const each of cores) each.requestRefresh(request)
      return
    }
    const byCore = new Map<SiteCore, number[]>()
    for (const id of request.ids) {
      const holder = cores.find((each) => each.sync.current?.byId.has(id) ?? false) ?? core
      byCore.set(holder, [...(byCore.get(holder) ?? []), id])
    }
    for (const [holder, ids] of byCore) holder.requestRefresh({ ...request, ids })
  }
}
