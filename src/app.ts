/**
 * Builds the cms-shield application: the CMS client, the sync loop, the caches and the HTTP
 * routes, wired together with every dependency passed in. It does not listen: `main.ts` does,
 * and tests drive it with `inject()` or `listen({ port: 0 })`.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Dispatcher } from 'undici'
import { createReadThrough, type ReadThrough } from './cache/read-through.js'
import { createMemoryStore } from './cache/stores/memory-store.js'
import { createSharedTier, type SharedTier } from './cache/shared-tier.js'
import { createSnapshotFile } from './persist/snapshot-file.js'
import { createSnapshotPersistence, type SnapshotPersistence } from './persist/snapshot-persistence.js'
import type { Config } from './config/load-config.js'
import { createUrlRewriter } from './json/rewrite-detail-urls.js'
import { methodNotAllowedAnswer, NOT_FOUND_ANSWER, proxyFailureAnswer } from './http/answers.js'
import { createPagesService, type PagesService } from './http/pages-service.js'
import { registerHealthRoutes } from './http/routes/health.js'
import { isApiRoute, registerPagesRoutes, sendAnswer } from './http/routes/pages.js'
import { createClusterCoordinator, followRole, type ClusterCoordinator } from './sync/cluster-coordinator.js'
import { createLeaderLease } from './sync/leader-lease.js'
import { createSyncService, type SyncService, type Timers } from './sync/sync-service.js'
import { createClusterChannel } from './cache/cluster-channel.js'
import { diffSnapshots, type TreeChange } from './tree/tree-diff.js'
import type { Snapshot } from './tree/snapshot.js'
import { parseCidrList, type AddressList } from './config/cidr.js'
import { createPurgeAccess } from './http/purge-access.js'
import { registerPurgeRoute } from './http/routes/purge.js'
import { registerRefreshWebhook } from './http/routes/refresh-webhook.js'
import { loadSnapshot } from './persist/snapshot-codec.js'
import type { RefreshRequest } from './sync/refresh-request.js'
import type { UpstreamGet } from './sync/upstream-port.js'
import { createHttpClient } from './upstream/http-client.js'
import { toStoredAnswer } from './upstream/read-through-loader.js'
import { createWagtailClient, PAGES_API_PATH } from './upstream/wagtail-client.js'

export interface AppDependencies {
  /** Transport to the CMS (tests: MockAgent or an Agent with tight timeouts). */
  readonly dispatcher?: Dispatcher
  /** Fastify's `logger` option: `false`, options for pino, or a pino instance (`loggerInstance`). */
  readonly logger?: FastifyServerOptions['logger']
  readonly now?: () => number
  readonly random?: () => number
  readonly timers?: Timers
  /** Start syncing when the app is ready (default true). Tests may call `shield.sync.syncNow()` themselves. */
  readonly autoSync?: boolean
}

/** The parts of the app tests and operations reach into. */
export interface Shield {
  readonly config: Config
  readonly sync: SyncService
  readonly readThrough: ReadThrough
  readonly pages: PagesService
  /** Redis, when configured. */
  readonly shared: SharedTier | undefined
  readonly persistence: SnapshotPersistence | undefined
  /** With Redis: who syncs, and how snapshots and refresh requests travel between instances. */
  readonly cluster: ClusterCoordinator | undefined
  /** Where PURGE and webhook calls go: this instance's sync, or the one that syncs. */
  requestRefresh(request: RefreshRequest): void
}

declare module 'fastify' {
  interface FastifyInstance {
    shield: Shield
  }
}

const NOBODY: AddressList = { entries: [], has: () => false }

const defaultTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now
  const random = deps.random ?? Math.random
  const timers = deps.timers ?? defaultTimers
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel },
    // One line per request from the onResponse hook below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: {
      // Django and Fastify agree: `/pages` and `/pages/` are different routes (the first one 301s).
      ignoreTrailingSlash: false,
      maxParamLength: 1000,
    },
    return503OnClosing: true,
    // A path that is not valid percent-encoding matches no route: Django's 404, not Fastify's JSON 400.
    frameworkErrors: (error, _request, reply) => {
      if (error.code === 'FST_ERR_BAD_URL') return void sendAnswer(reply, NOT_FOUND_ANSWER)
      return void sendAnswer(reply, proxyFailureAnswer(400, 'bad request'))
    },
  })

  const http = createHttpClient({
    baseUrl: config.upstreamUrl,
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
    connections: config.upstreamConnections,
    timeoutMs: config.upstreamTimeoutMs,
    retries: config.upstreamRetries,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    logger: app.log,
    random,
    now,
  })
  const wagtail = createWagtailClient({ http })
  const rewriteUrl = createUrlRewriter({ baseUrl: config.baseUrl, upstreamPathPrefix: new URL(config.upstreamUrl).pathname })

  const get: UpstreamGet = async (pathAndQuery, signal) => {
    const response = await http.get(pathAndQuery, signal ? { signal } : {})
    return { status: response.status, contentType: response.contentType, headers: response.headers, text: response.text() }
  }

  const memoryTier = createMemoryStore({ maxBytes: config.cacheMaxBytes, now })
  const shared = createSharedTier(config, app.log, now)
  const readThrough = createReadThrough({
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
    logger: app.log,
    load: async (relative) => toStoredAnswer(await wagtail.raw(relative), rewriteUrl, now(), `GET ${PAGES_API_PATH}${relative}`),
  })

  const sync = createSyncService({
    get,
    pagesPath: PAGES_API_PATH,
    rewriteUrl,
    concurrency: config.syncConcurrency,
    intervalMs: config.syncIntervalMs,
    fullIntervalMs: config.fullSyncIntervalMs,
    debounceMs: config.refreshDebounceMs,
    retryMaxMs: config.syncRetryMaxMs,
    logger: app.log,
    now,
    random,
    timers,
    onSnapshot: (snapshot, previous, source) => {
      logTreeChange(app.log, diffSnapshots(previous, snapshot), snapshot, source)
      // Only what this instance synced is stored and announced; the others' is already in Redis.
      if (source === 'sync' && persistence) {
        void persistence.save(snapshot).then(() => cluster?.announce(snapshot))
      }
    },
  })
  // Reads the sync's snapshot on every request: a swap is seen by the next one.
  const pages: PagesService = createPagesService({
    snapshot: () => sync.current,
    readThrough,
    baseUrl: config.baseUrl,
    renderCacheMaxBytes: config.renderCacheMaxBytes,
    cacheTags: config.cacheTagHeaders,
    clientCache: {
      maxAgeMs: config.clientMaxAgeMs,
      staleWhileRevalidateMs: config.clientStaleWhileRevalidateMs,
      staleIfErrorMs: config.clientStaleIfErrorMs,
    },
    now,
    logger: app.log,
  })

  const targets = [
    ...(config.snapshotFile === undefined ? [] : [createSnapshotFile({ path: config.snapshotFile, logger: app.log })]),
    ...(shared ? [shared.snapshotTarget] : []),
  ]
  const persistence = targets.length === 0
    ? undefined
    : createSnapshotPersistence({ targets, upstreamUrl: config.upstreamUrl, baseUrl: config.baseUrl, logger: app.log, now })

  const cluster = shared ? createCluster(config, shared, sync, app.log, now, timers) : undefined
  const requestRefresh = (request: RefreshRequest) => (cluster ? cluster.requestRefresh(request) : sync.refresh(request))

  app.decorate('shield', { config, sync, readThrough, pages, shared, persistence, cluster, requestRefresh })

  // The API takes no bodies: accept any content type (so a POST gets DRF's 405, not a 415) and drop it.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))

  registerPagesRoutes(app, pages)
  const purgeAllow = parseCidrList(config.purgeAllow)
  registerPurgeRoute(app, {
    snapshot: () => sync.current,
    requestRefresh,
    // The config was validated at load: the list parses.
    access: createPurgeAccess({ allow: purgeAllow.ok ? purgeAllow.list : NOBODY, ...(config.purgeToken ? { token: config.purgeToken } : {}) }),
    logger: app.log,
  })
  if (config.refreshToken !== undefined) registerRefreshWebhook(app, { token: config.refreshToken, requestRefresh, logger: app.log })
  registerHealthRoutes(app, {
    sync,
    now,
    ...(shared ? { redis: { up: () => shared.isUp(), errors: () => shared.store.errors } } : {}),
    ...(cluster ? { role: () => cluster.role } : {}),
  })
  // Methods Fastify has no route for (PROPFIND, SEARCH…) still get DRF's 405 on the API's paths.
  app.setNotFoundHandler((request, reply) => {
    const path = (request.raw.url ?? '/').split('?')[0]!
    if (isApiRoute(path) && request.method !== 'GET' && request.method !== 'HEAD') {
      return sendAnswer(reply, methodNotAllowedAnswer(request.method))
    }
    return sendAnswer(reply, NOT_FOUND_ANSWER)
  })
  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed')
      return sendAnswer(reply, proxyFailureAnswer(500, 'internal error'))
    }
    return sendAnswer(reply, proxyFailureAnswer(status, error instanceof Error ? error.message : "bad request"))
  })

  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request')
    done()
  })
  app.addHook('onReady', async () => {
    // Warm start: serve the newest stored snapshot at once, then sync in the background.
    if (persistence) {
      if (shared) await shared.waitUntilUp(Math.min(1000, config.redisCommandTimeoutMs * 4))
      const loaded = await persistence.loadNewest()
      if (loaded && sync.adopt(loaded.snapshot)) {
        app.log.info({ source: loaded.source, version: loaded.snapshot.version, pages: loaded.snapshot.pages.length }, 'serving a stored snapshot')
      }
    }
    if (!(deps.autoSync ?? true)) return
    if (cluster) cluster.start()
    else sync.start()
  })
  app.addHook('onClose', async () => {
    // Release the lease first, so another instance takes over at its next tick.
    await cluster?.stop()
    await sync.stop()
    await http.close()
    await shared?.close()
  })
  return app
}

/** The lease, the channel and the follower's loading of the shared snapshot. */
function createCluster(config: Config, shared: SharedTier, sync: SyncService, logger: FastifyBaseLogger, now: () => number, timers: Timers): ClusterCoordinator {
  const origin = { upstreamUrl: config.upstreamUrl, baseUrl: config.baseUrl }
  const lease = createLeaderLease({
    redis: shared.client,
    key: `${config.redisPrefix}leader`,
    owner: `${hostname()}:${process.pid}:${randomUUID()}`,
    leaseMs: config.leaderLeaseMs,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    now,
    timers,
    logger,
    onRoleChange: (role) => followRole(sync, role, logger),
  })
  const channel = createClusterChannel({
    redis: shared.client,
    subscriber: shared.subscriber,
    prefix: config.redisPrefix,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    logger,
  })
  return createClusterCoordinator({
    sync,
    lease,
    channel,
    loadShared: async () => {
      const buf = await shared.snapshotTarget.read()
      if (!buf) return undefined
      const loaded = loadSnapshot(buf, origin)
      if (!loaded.ok) {
        logger.warn({ reason: loaded.reason }, 'cluster: the shared snapshot cannot be served')
        return undefined
      }
      return loaded.snapshot
    },
    pollMs: Math.max(100, Math.floor(config.leaderLeaseMs / 3)),
    timers,
    logger,
  })
}

/** Most purge keys one log line lists; the count is always there. */
const LOGGED_PURGE_KEYS = 100

/**
 * One line per swapped-in snapshot: what changed, and the `Surrogate-Key`/`Cache-Tag` keys a CDN
 * in front must purge (derived from the tree diff: Wagtail itself never purges lists or moves).
 */
function logTreeChange(logger: FastifyBaseLogger, change: TreeChange, snapshot: Snapshot, source: string): void {
  logger.info(
    {
      source,
      version: snapshot.version,
      pages: snapshot.pages.length,
      added: change.added.length,
      removed: change.removed.length,
      changed: change.changed.length,
      moved: change.moved.length,
      purgeKeyCount: change.purgeKeys.length,
      purgeKeys: change.purgeKeys.slice(0, LOGGED_PURGE_KEYS),
    },
    'snapshot: swapped in',
  )
}
