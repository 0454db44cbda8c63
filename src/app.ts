/**
 * The composition root: builds cms-shield's parts in the order the architecture draws them
 * (`docs/architecture.md`), each by its own module in `compose/`, with every dependency passed
 * in. It does not listen: `main.ts` does, and tests drive it with `inject()` or `listen({ port: 0 })`.
 *
 * Two phases. Phase 1 builds the parts in order, each from those built before it. A few parts are
 * read by parts built before them (the server reads the fast path built on it; the sync reads the
 * cluster built from it, and hands its swaps to the after-swap pipeline, which needs the
 * cluster): those are `Late` holders (`compose/late.ts`), set in phase 2, and reading one
 * earlier throws an error naming it. Phase 2 then registers the routes and hooks.
 *
 *   upstream → caches → persistence → sync → cluster → after-swap (CDN) → serving → operations → lifecycle
 * @module
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Dispatcher } from 'undici'
import type { ReadThroughBudget } from './cache/budget/read-through-budget.js'
import type { ReadThrough } from './cache/read-through.js'
import type { SharedTier } from './cache/shared-tier.js'
import type { MemoryStore } from './cache/stores/memory-store.js'
import { composeCaches } from './compose/caches.js'
import type { CdnParts } from './compose/after-swap.js'
import { composeCdn } from './compose/cdn.js'
import { clockOf } from './compose/clock.js'
import { instanceOwner } from './compose/cluster.js'
import { registerLifecycle } from './compose/lifecycle.js'
import { composeMetrics, registerOperations } from './compose/operations.js'
import { logPrivateApiPaths, privateApiPaths } from './compose/private-apis.js'
import { serverOptions } from './compose/server.js'
import { composeServing } from './compose/serving.js'
import { createSharedPages } from './compose/shared-pages.js'
import { composeSiteCore, siteConfig, type SiteCore } from './compose/site-core.js'
import { composeUpstream } from './compose/upstream.js'
import { createEndpointPurge } from './compose/endpoint-purge.js'
import { assertConnected, late as lateHolder } from './compose/late.js'
import type { Config } from './config/load-config.js'
import type { FastPath } from './http/fast-path.js'
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
  /** What follows each synced swap, up to the CDN purge (docs/cdn-purging.md); `cdn.delivery` is undefined without a target. */
  readonly cdn: CdnParts
  readonly memoryTier: MemoryStore
  readonly metrics: Metrics
  /** Requests the fast path answered before Fastify (0 with FAST_PATH=false). */
  fastPathAnswered(): number
  /** The trees of the CMS's other Sites (SITES), by hostname. */
  readonly sites: ReadonlyMap<string, SiteCore>
}

declare module 'fastify' {
  interface FastifyInstance {
    shield: Shield
  }
}

/** Other Sites' clusters share no endpoint generations: those travel on the default Site's. */
const NO_GENERATIONS = { adopt: () => undefined, settle: () => undefined }

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  // Phase 1 builds every part, each from parts built before it. Three are read by parts built
  // before them, and only once requests and syncs run; they are held by `Late` until phase 2.
  const late = {
    fastPath: lateHolder<FastPath | undefined>('the fast path (serving)'),
  }
  const clock = clockOf(deps)
  const events = createShieldEvents()
  const privateApis = privateApiPaths(config.privateApis)
  const app = Fastify(serverOptions({
    config, logger: deps.logger, logStream: deps.logStream, fastPath: late.fastPath.get, preparedHeaders: privateApis.preparedHeaders === 'private',
  }))
  const logger = app.log
  logPrivateApiPaths(logger, privateApis, config.privateApis)

  const upstream = composeUpstream({ config, dispatcher: deps.dispatcher, logger, events, now: clock.now, random: clock.random })
  const caches = composeCaches({ config, upstream, logger, events, clock })
  const { shared } = caches
  const owner = instanceOwner()
  const delivery = composeCdn({ config, logger, events, clock, ...(deps.cdnDispatcher ? { dispatcher: deps.cdnDispatcher } : {}) })
  // One tree per Site: the default Site's, then each of SITES (`compose/site-core.ts`).
  const sharedPages = config.sites.length > 0 ? createSharedPages() : undefined
  const core = composeSiteCore({
    site: undefined, config, upstream, shared, owner, endpointGenerations: caches.endpointGenerations, purge: delivery, logger, events, clock,
    ...(sharedPages ? { sharedPages } : {}),
  })
  const others = config.sites.map((site) => composeSiteCore({
    site, config: siteConfig(config, site), upstream, shared, owner, endpointGenerations: NO_GENERATIONS, purge: delivery,
    logger: logger.child({ site }), events: createShieldEvents(), clock, ...(sharedPages ? { sharedPages } : {}),
  }))
  const { sync, persistence, cluster, requestRefresh } = core
  const cdn = core.afterSwap
  const serving = await composeServing(app, { config, core, others, readThrough: caches.readThrough, endpointGenerations: caches.endpointGenerations, events, now: clock.now })
  const purgeScope = createEndpointPurge({ generations: caches.endpointGenerations, cluster, cdn, now: clock.now, logger })
  const operations = { config, sync, core, others, caches, cluster, requestRefresh, purgeScope, events, now: clock.now, privateApis }
  const metrics = composeMetrics(operations)

  // Phase 2 connects the parts read before they were built, then registers the routes and hooks.
  late.fastPath.set(serving.fastPath)
  assertConnected(late)

  const { readThrough, budget, memoryTier } = caches
  const { pages, fastPath } = serving
  app.decorate('shield', {
    config, sync, readThrough, budget, pages, shared, persistence, cluster, requestRefresh, events, cdn, memoryTier, metrics,
    fastPathAnswered: () => fastPath?.answered ?? 0,
    sites: new Map(others.map((other) => [other.site!, other])),
  } satisfies Shield)
  registerOperations(app, operations, metrics)
  serving.registerAnswerHooks()
  registerLifecycle(app, {
    config, cores: [core, ...others], shared, metrics, closeUpstream: () => upstream.close(),
    autoSync: deps.autoSync ?? true,
  })
  return app
}
