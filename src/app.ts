/**
 * Builds the cms-shield application: the CMS client, the sync loop, the caches and the HTTP
 * routes, wired together with every dependency passed in. It does not listen: `main.ts` does,
 * and tests drive it with `inject()` or `listen({ port: 0 })`.
 * @module
 */
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
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
import { createSyncService, type SyncService, type Timers } from './sync/sync-service.js'
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
}

declare module 'fastify' {
  interface FastifyInstance {
    shield: Shield
  }
}

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now
  const random = deps.random ?? Math.random
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
    retryMaxMs: config.syncRetryMaxMs,
    logger: app.log,
    now,
    random,
    ...(deps.timers ? { timers: deps.timers } : {}),
    // Rendered bodies belong to the old snapshot. Read-through keys carry the snapshot's
    // fingerprint, so a changed tree starts them afresh on every instance.
    onSnapshot: (snapshot, _previous, source) => {
      pages.onSnapshotChanged()
      if (source === 'sync') void persistence?.save(snapshot)
    },
  })
  // Declared after the sync (whose callback uses it) because it reads the sync's snapshot.
  const pages: PagesService = createPagesService({
    snapshot: () => sync.current,
    readThrough,
    baseUrl: config.baseUrl,
    renderCacheMaxBytes: config.renderCacheMaxBytes,
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

  app.decorate('shield', { config, sync, readThrough, pages, shared, persistence })

  // The API takes no bodies: accept any content type (so a POST gets DRF's 405, not a 415) and drop it.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))

  registerPagesRoutes(app, pages)
  registerHealthRoutes(app, sync, now, shared ? { up: () => shared.isUp(), errors: () => shared.store.errors } : undefined)
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
    if (deps.autoSync ?? true) sync.start()
  })
  app.addHook('onClose', async () => {
    await sync.stop()
    await http.close()
    await shared?.close()
  })
  return app
}
