/**
 * Builds the cms-shield application: the CMS client, the sync loop, the caches and the HTTP
 * routes, wired together with every dependency passed in. It does not listen: `main.ts` does,
 * and tests drive it with `inject()` or `listen({ port: 0 })`.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import { clientErrorStatus, endSocket, refuseTunnel, socketAnswer } from './http/socket-answers.js'
import { hostname } from 'node:os'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Dispatcher } from 'undici'
import { createReadThrough, type ReadThrough } from './cache/read-through.js'
import { createBudget } from './cache/budget/create-budget.js'
import type { ReadThroughBudget } from './cache/budget/read-through-budget.js'
import { clientAddressOf } from './http/client-address.js'
import { createMemoryStore, type MemoryStore } from './cache/stores/memory-store.js'
import { loggerOptions, writesAt } from './observability/logging.js'
import { requestIdFrom } from './observability/request-id.js'
import { createMetrics, type Metrics } from './observability/metrics.js'
import { registerMetricsRoute } from './http/routes/metrics.js'
import { cacheOutcomeOf, routeOf } from './observability/request-labels.js'
import { createShieldEvents, type ShieldEvents, type UpstreamKind } from './observability/shield-events.js'
import { createSharedTier, type SharedTier } from './cache/shared-tier.js'
import { createSnapshotFile } from './persist/snapshot-file.js'
import { createSnapshotPersistence, type SnapshotPersistence } from './persist/snapshot-persistence.js'
import type { Config } from './config/load-config.js'
import { createUrlRewriter } from './json/rewrite-detail-urls.js'
import { methodNotAllowedAnswer, NOT_FOUND_ANSWER, proxyFailureAnswer } from './http/answers.js'
import { createPagesService, type PagesService } from './http/pages-service.js'
import { registerHealthRoutes } from './http/routes/health.js'
import { isApiRoute, registerPagesRoutes, sendAnswer } from './http/routes/pages.js'
import { createClusterCoordinator, followRole, type ClusterCoordinator } from './cluster/cluster-coordinator.js'
import { createLeaderLease } from './cluster/leader-lease.js'
import { createSyncService, type SyncService } from './sync/sync-service.js'
import { realTimers, type Timers } from './timers.js'
import { createClusterChannel } from './cluster/cluster-channel.js'
import { diffSnapshots, type TreeChange } from './tree/tree-diff.js'
import type { Snapshot } from './tree/snapshot.js'
import { createPurgeAccess } from './http/purge-access.js'
import { registerPurgeRoute } from './http/routes/purge.js'
import { registerLoadShedding } from './http/load-shedding.js'
import { createFastPath, type FastPath } from './http/fast-path.js'
import { registerRefreshWebhook } from './http/routes/refresh-webhook.js'
import { loadSnapshot } from './persist/snapshot-codec.js'
import type { RefreshRequest } from './sync/refresh-request.js'
import type { UpstreamGet } from './sync/upstream-port.js'
import { createHttpClient } from './upstream/http-client.js'
import { toStoredAnswer } from './cache/read-through-loader.js'
import { createWagtailClient, PAGES_API_PATH } from './upstream/wagtail-client.js'

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
}

/** The parts of the app tests and operations reach into. */
export interface Shield {
  readonly config: Config
  readonly sync: SyncService
  readonly readThrough: ReadThrough
  /** What client-caused CMS requests must fit in (README, "Protecting the CMS"). */
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

/** Node's default request header limit (16 KiB), pinned. */
const MAX_HEADER_BYTES = 16 * 1024


export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now
  const random = deps.random ?? Math.random
  const timers = deps.timers ?? realTimers
  const events = createShieldEvents()
  // Bound once the pages service exists; until then (and with FAST_PATH=false) Fastify answers all.
  let fastPath: FastPath | undefined
  let closing = false
  const app = Fastify({
    serverFactory: (handler, options) => {
      // The header limit is Node's default, set here so NODE_OPTIONS cannot raise it unseen.
      const server = createServer({ ...options, maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
        if (fastPath?.(req, res) !== true) handler(req, res)
      })
      server.on('connect', (_req, socket) => refuseTunnel(socket))
      server.on('upgrade', (_req, socket) => refuseTunnel(socket))
      return server
    },
    // What Node's parser refuses gets the API's error envelope, not Fastify's own shape.
    clientErrorHandler: (error, socket) => {
      const status = clientErrorStatus((error as NodeJS.ErrnoException).code)
      endSocket(socket, socketAnswer(status, status === 431 ? 'request header fields too large' : status === 408 ? 'request timeout' : 'bad request'))
    },
    logger: deps.logger ?? (deps.logStream ? { ...loggerOptions(config), stream: deps.logStream } : loggerOptions(config)),
    // `X-Request-Id` is honoured when it looks like one, generated otherwise, and sent back.
    requestIdHeader: false,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']),
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

  // Two pools: the sync and refreshes never wait for a connection behind client-caused requests.
  const upstreamClient = (trafficClass: 'sync' | 'read_through', connections: number) => createHttpClient({
    baseUrl: config.upstreamUrl,
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
    connections,
    trafficClass,
    timeoutMs: config.upstreamTimeoutMs,
    retries: config.upstreamRetries,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    logger: app.log,
    random,
    now,
    onAttempt: (attempt) => {
      if (events.listens('upstream')) {
        events.emit('upstream', { kind: upstreamKind(attempt.path), trafficClass: attempt.trafficClass, status: attempt.status, durationMs: attempt.durationMs })
      }
    },
  })
  const http = upstreamClient('sync', config.upstreamConnections)
  const readThroughHttp = upstreamClient('read_through', config.readThroughConcurrency)
  const wagtail = createWagtailClient({ http: readThroughHttp })
  const rewriteUrl = createUrlRewriter({ baseUrl: config.baseUrl, upstreamPathPrefix: new URL(config.upstreamUrl).pathname })

  const get: UpstreamGet = async (pathAndQuery, signal, trafficClass) => {
    const response = await http.get(pathAndQuery, { ...(signal ? { signal } : {}), ...(trafficClass ? { trafficClass } : {}) })
    // Decoded at once: a getter that decoded on first read kept ~75 MiB more after a 100k-page sync.
    return { status: response.status, contentType: response.contentType, headers: response.headers, bytes: response.body, text: response.text() }
  }

  const memoryTier = createMemoryStore({ maxBytes: config.cacheMaxBytes, now })
  const shared = createSharedTier(config, app.log, now)
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
    timers,
    logger: app.log,
    onRefused: (reason) => events.emit('budget', { reason }),
    onScopeChange: (scope) => events.emit('budgetScope', { scope }),
  })
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
    onSyncEnd: (result) => {
      if (result.ok && !result.changed) void cluster?.confirm()
      events.emit('sync', {
        mode: result.mode,
        result: !result.ok ? 'failed' : result.changed ? 'changed' : 'unchanged',
        durationMs: result.durationMs,
        detailsFetched: result.ok ? result.detailsFetched : 0,
        pages: result.ok ? result.pages : 0,
        ...(result.ok ? {} : { code: result.code }),
      })
    },
    onSnapshot: (snapshot, previous, source) => {
      const change = diffSnapshots(previous, snapshot)
      logTreeChange(app.log, change, snapshot, source)
      events.emit('snapshot', {
        version: snapshot.version,
        pages: snapshot.pages.length,
        syncedAt: snapshot.syncedAt,
        source,
        changedPages: change.added.length + change.removed.length + new Set([...change.changed, ...change.moved]).size,
      })
      // Only what this instance synced is stored and announced; the others' is already in Redis.
      if (source === 'sync' && persistence) {
        void persistence.save(snapshot).then(() => cluster?.announce(snapshot))
      }
    },
  })
  // Reads the sync's snapshot on every request: a swap is seen by the next one.
  const clientOf = (req: IncomingMessage) => clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], config.trustProxy)
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
    cmsHealthy: () => sync.status.consecutiveFailures === 0,
  })

  const targets = [
    ...(config.snapshotFile === undefined ? [] : [createSnapshotFile({ path: config.snapshotFile, logger: app.log })]),
    ...(shared ? [shared.snapshotTarget] : []),
  ]
  const persistence = targets.length === 0
    ? undefined
    : createSnapshotPersistence({ targets, upstreamUrl: config.upstreamUrl, baseUrl: config.baseUrl, logger: app.log, now })

  const cluster = shared ? createCluster(config, shared, sync, app.log, now, timers, events, persistence) : undefined
  const requestRefresh = (request: RefreshRequest) => (cluster ? cluster.requestRefresh(request) : sync.refresh(request))

  // Metrics only listen: every number comes from an event or is read from its source at scrape.
  const metrics = createMetrics({
    events,
    tiers: [
      { name: 'memory', events: memoryTier, entries: () => memoryTier.entries, bytes: () => memoryTier.bytes },
      ...(shared ? [{ name: 'redis' as const, events: shared.store }] : []),
    ],
    snapshot: () => sync.current,
    ...(shared ? { redis: { up: () => shared.isUp() } } : {}),
    ...(cluster ? { role: () => cluster.role } : {}),
    budget: () => budget.state(),
    now,
  })

  if (config.fastPath) {
    fastPath = createFastPath({
      pages,
      snapshot: () => sync.current,
      isUnderPressure: () => app.isUnderPressure(),
      isClosing: () => closing,
      requestId: requestIdFrom,
      clientOf,
      onAnswered: (answered) => {
        const { route } = answered
        const cache = cacheOutcomeOf(answered.cacheStatus)
        // Checked first: building the line's object for a level that is off costs every request.
        if (writesAt(app.log.level, 'info')) {
          app.log.info({ reqId: answered.reqId, method: answered.method, url: answered.url, route, statusCode: answered.status, cache, ms: Math.round(answered.durationMs) }, 'request')
        }
        events.emit('request', { route, method: answered.method, status: answered.status, cache, durationMs: answered.durationMs })
      },
    })
  }

  app.decorate('shield', {
    config, sync, readThrough, budget, pages, shared, persistence, cluster, requestRefresh, events, memoryTier, metrics,
    fastPathAnswered: () => fastPath?.answered ?? 0,
  })

  // The API takes no bodies: accept any content type (so a POST gets DRF's 405, not a 415) and drop it.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))

  await registerLoadShedding(app, config, (reason) => app.log.debug({ reason }, 'load shed: 503'))
  registerPagesRoutes(app, pages, clientOf)
  registerPurgeRoute(app, {
    snapshot: () => sync.current,
    requestRefresh,
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
    now,
    ...(shared ? { redis: { up: () => shared.isUp(), errors: () => shared.store.errors } } : {}),
    ...(cluster ? { role: () => cluster.role, confirmedAt: () => cluster.confirmedAt } : {}),
    budget: () => budget.state(),
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

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  // Once closing, a request still in flight gets `Connection: close`: the server closed its idle
  // connections when closing began, and a kept-alive one would otherwise hold the exit back.
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
  // One line and one event per request; the request id is on the line (pino's `reqId`).
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeOf(request.method, request.url)
    const cache = cacheOutcomeOf(reply.getHeader('cache-status'))
    const durationMs = reply.elapsedTime
    request.log.info({ method: request.method, url: request.url, route, statusCode: reply.statusCode, cache, ms: Math.round(durationMs) }, 'request')
    events.emit('request', { route, method: request.method, status: reply.statusCode, cache, durationMs })
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
    metrics.close()
    await sync.stop()
    await http.close()
    await readThroughHttp.close()
    await shared?.close()
  })
  return app
}

/** The lease, the channel and the follower's loading of the shared snapshot. */
function createCluster(
  config: Config, shared: SharedTier, sync: SyncService, logger: FastifyBaseLogger, now: () => number, timers: Timers, events: ShieldEvents,
  persistence: SnapshotPersistence | undefined,
): ClusterCoordinator {
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
    onRoleChange: (role) => {
      followRole(sync, role, logger)
      events.emit('role', { role })
    },
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
    // A Redis that came back empty gets the leader's snapshot again (followers start from it).
    storeShared: async (snapshot) => {
      await persistence?.save(snapshot)
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

/** The kind of CMS request, from its path: a bounded label for metrics. */
function upstreamKind(path: string): UpstreamKind {
  const at = path.indexOf(PAGES_API_PATH)
  if (at < 0) return 'other'
  const rest = path.slice(at + PAGES_API_PATH.length).split('?')[0]!
  if (rest === '') return 'list'
  if (rest === 'find/') return 'find'
  return /^[0-9]+\/$/.test(rest) ? 'detail' : 'other'
}
