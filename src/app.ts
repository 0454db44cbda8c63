/**
 * The composition root: builds cms-shield's parts in the order the architecture draws them
 * (`docs/architecture.md`), each by its own module in `compose/`, with every dependency passed
 * in. It does not listen: `main.ts` does, and tests drive it with `inject()` or `listen({ port: 0 })`.
 *
 *   upstream → caches → sync (+ persistence) → cluster → serving → operations → lifecycle
 * @module
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Dispatcher } from 'undici'
import type { ReadThroughBudget } from './cache/budget/read-through-budget.js'
import type { ReadThrough } from './cache/read-through.js'
import type { SharedTier } from './cache/shared-tier.js'
import type { MemoryStore } from './cache/stores/memory-store.js'
import { composeCaches } from './compose/caches.js'
import { composeCdn, type CdnParts } from './compose/cdn.js'
import { clockOf } from './compose/clock.js'
import { composeCluster, instanceOwner } from './compose/cluster.js'
import { registerLifecycle } from './compose/lifecycle.js'
import { composeMetrics, registerOperations } from './compose/operations.js'
import { composePersistence } from './compose/persistence.js'
import { logPrivateApiPaths, privateApiPaths } from './compose/private-apis.js'
import { serverOptions } from './compose/server.js'
import { composeServed, servedPurgeGate } from './compose/served.js'
import { composeServing } from './compose/serving.js'
import { composeSync } from './compose/sync.js'
import { composeUpstream } from './compose/upstream.js'
import { createEndpointPurge } from './compose/endpoint-purge.js'
import type { Config } from './config/load-config.js'
import type { PagesService } from './http/pages-service.js'
import type { Metrics } from './observability/metrics.js'
import { createShieldEvents, type ShieldEvents } from './observability/shield-events.js'
import type { SnapshotPersistence } from './persist/snapshot-persistence.js'
import type { ClusterCoordinator } from './cluster/cluster-coordinator.js'
import type { RefreshRequest } from './sync/refresh-request.js'
import type { SyncService } from './sync/sync-service.js'
import type { Timers } from './timers.js'

export interface AppDependencies {
  /** Transport to the CMS (tests: MockAgent or an Agent with tight timeouts). */
  readonly dispatcher?: Dispatcher
  /** Replaces cms-shield's logger options altogether (`false` for silence); redaction is then yours. */
  readonly logger?: FastifyServerOptions['logger']
  /** Where cms-shield's own log lines go (tests capture them); default stdout. */
  readonly logStream?: { write(line: string): void }
  readonly now?: () => number
  readonly random?: () => number
  readonly timers?: Timers
  /** Start syncing when the app is ready (default true). Tests may call `shield.sync.syncNow()` themselves. */
  readonly autoSync?: boolean
  /** Transport to the CDN purge APIs and Varnish (tests: loopback fakes); default undici's global agent. */
  readonly cdnDispatcher?: Dispatcher
}

/** The parts of the app tests and operations reach into. */
export interface Shield {
  readonly config: Config
  readonly sync: SyncService
  readonly readThrough: ReadThrough
  /** What client-caused CMS requests must fit in (docs/operations.md, "The CMS budget"). */
  readonly budget: ReadThroughBudget
  readonly pages: PagesService
  /** Redis, when configured. */
  readonly shared: SharedTier | undefined
  readonly persistence: SnapshotPersistence | undefined
  /** With Redis: who syncs, and how snapshots and refresh requests travel between instances. */
  readonly cluster: ClusterCoordinator | undefined
  /** Where PURGE and webhook calls go: this instance's sync, or the one that syncs. */
  requestRefresh(request: RefreshRequest): void
  /** What happens, for metrics and logs. */
  readonly events: ShieldEvents
  /** CDN purging after each synced swap (docs/cdn-purging.md); `cdn.delivery` is undefined without a target. */
  readonly cdn: CdnParts
  readonly memoryTier: MemoryStore
  readonly metrics: Metrics
  /** Requests the fast path answered before Fastify (0 with FAST_PATH=false). */
  fastPathAnswered(): number
}

declare module 'fastify' {
  interface FastifyInstance {
    shield: Shield
  }
}

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const clock = clockOf(deps)
  const events = createShieldEvents()
  // The closures below read parts built after them; they run only once requests and syncs do.
  const privateApis = privateApiPaths(config.privateApis)
  const app = Fastify(serverOptions({
    config, logger: deps.logger, logStream: deps.logStream, fastPath: () => serving.fastPath, preparedHeaders: privateApis.preparedHeaders === 'private',
  }))
  const logger = app.log
  logPrivateApiPaths(logger, privateApis, config.privateApis)

  const upstream = composeUpstream({ config, dispatcher: deps.dispatcher, logger, events, now: clock.now, random: clock.random })
  const caches = composeCaches({ config, upstream, logger, events, clock })
  const persistence = composePersistence(config, caches.shared, logger, clock.now)
  const cdn = composeCdn({ config, logger, events, clock, gate: () => purgeGate, ...(deps.cdnDispatcher ? { dispatcher: deps.cdnDispatcher } : {}) })
  const sync = composeSync({
    config, upstream, persistence, cluster: () => cluster, logger, events, clock,
    onSyncedSwap: (swap) => cdn.purgeAfterSwap(swap.purgeKeys, swap.snapshot.fingerprint, swap.swappedAt, swap.stored),
  })
  const { shared } = caches
  const owner = instanceOwner()
  const cluster = shared ? composeCluster({ config, owner, shared, sync, persistence, endpointGenerations: caches.endpointGenerations, logger, events, clock }) : undefined
  const served = shared ? composeServed({ config, shared, owner, events, logger, clock }) : undefined
  // Without Redis the CDN's own gate: the one instance serves what it synced the moment it swaps.
  const purgeGate = served && cluster ? servedPurgeGate(served, cluster, config.cdnPurgeWaitMs, logger, events) : undefined
  const requestRefresh = (request: RefreshRequest) => (cluster ? cluster.requestRefresh(request) : sync.refresh(request))

  const serving = await composeServing(app, { config, sync, readThrough: caches.readThrough, endpointGenerations: caches.endpointGenerations, events, now: clock.now })
  const purgeScope = createEndpointPurge({ generations: caches.endpointGenerations, cluster: () => cluster, cdn, now: clock.now, logger })
  const operations = { config, sync, caches, cluster, requestRefresh, purgeScope, events, now: clock.now, privateApis }
  const metrics = composeMetrics(operations)
  const { readThrough, budget, memoryTier } = caches
  const { pages, fastPath } = serving
  app.decorate('shield', {
    config, sync, readThrough, budget, pages, shared, persistence, cluster, requestRefresh, events, cdn, memoryTier, metrics,
    fastPathAnswered: () => fastPath?.answered ?? 0,
  } satisfies Shield)
  registerOperations(app, operations, metrics)
  serving.registerAnswerHooks()
  registerLifecycle(app, {
    config, sync, shared, persistence, cluster, served, metrics, closeUpstream: () => upstream.close(), closeCdn: () => cdn.close(),
    autoSync: deps.autoSync ?? true,
  })
  return app
}
