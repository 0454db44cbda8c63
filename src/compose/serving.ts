/**
 * The serving part: the pages views, the serving core (`http/serve.ts`) and its two writers, the
 * fast path on the raw server and the Fastify routes, which share one after-answer step.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { ReadThrough } from '../cache/read-through.js'
import { configuredTargets } from '../cdn/cdn-purger.js'
import type { Config } from '../config/load-config.js'
import { createAfterAnswer } from '../http/after-answer.js'
import { clientAddressOf } from '../http/client-address.js'
import { createFastPath, type FastPath } from '../http/fast-path.js'
import { registerAnswerHooks, registerServeRoutes } from '../http/fastify-writer.js'
import { registerLoadShedding } from '../http/load-shedding.js'
import { createPagesService, type PagesService } from '../http/pages-service.js'
import { createServe } from '../http/serve.js'
import { createApiRouter } from '../http/api-router.js'
import { createEndpointsService } from '../http/endpoints-service.js'
import { createSiteOfHost } from '../http/site-of-host.js'
import { mountOf } from '../config/api-mount.js'
import type { EndpointGenerations } from '../cache/endpoint-generations.js'
import { requestIdFrom } from '../observability/request-id.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { SyncService } from '../sync/sync-service.js'

export interface ServingParts {
  readonly pages: PagesService
  /** The raw server's first try; undefined with FAST_PATH=false. */
  readonly fastPath: FastPath | undefined
  /** The hooks that follow every Fastify answer: registered last (see `registerAnswerHooks`). */
  registerAnswerHooks(): void
}

export interface ServingOptions {
  readonly config: Config
  readonly sync: SyncService
  readonly readThrough: ReadThrough
  /** The generation of each other endpoint's read-through answers (a PURGE starts a new one). */
  readonly endpointGenerations: Pick<EndpointGenerations, 'of'>
  readonly events: ShieldEvents
  readonly now: () => number
}

export async function composeServing(app: FastifyInstance, options: ServingOptions): Promise<ServingParts> {
  const { config, sync } = options
  const trusted = config.trustProxy
  const purged = configuredTargets(config)
  // Reads the sync's snapshot on every request: a swap is seen by the next one.
  const mount = mountOf(config)
  const route = createApiRouter(mount)
  const clientCache = {
    maxAgeMs: config.clientMaxAgeMs,
    staleWhileRevalidateMs: config.clientStaleWhileRevalidateMs,
    staleIfErrorMs: config.clientStaleIfErrorMs,
    // Only a CDN that is purged may keep answers longer than browsers (docs/cdn-purging.md#caching-headers).
    ...(purged.length > 0 ? { cdnMaxAgeMs: config.cdnMaxAgeMs } : {}),
    surrogateControl: purged.includes('fastly'),
  }
  const pages = createPagesService({
    snapshot: () => sync.current,
    mount,
    readThrough: options.readThrough,
    baseUrl: config.baseUrl,
    renderCacheMaxBytes: config.renderCacheMaxBytes,
    cacheTags: config.cacheTagHeaders,
    cacheStatus: config.cacheStatusHeader,
    clientCache,
    now: options.now,
    logger: app.log,
    cmsHealthy: () => sync.status.consecutiveFailures === 0,
  })
  const endpoints = mount.endpoints.length === 0 && config.sites.length === 0 ? undefined : createEndpointsService({
    readThrough: options.readThrough,
    pagesEndpoint: mount.pages,
    cacheTags: config.cacheTagHeaders,
    cacheStatus: config.cacheStatusHeader,
    clientCache,
    now: options.now,
    generationOf: options.endpointGenerations.of,
    notAcceptable: () => pages.notAcceptable(),
    logger: app.log,
  })
  let closing = false
  const isClosing = () => closing
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  const serve = createServe<IncomingMessage>({
    pages,
    ...(endpoints ? { endpoints } : {}),
    ...(config.sites.length > 0 ? { siteOf: createSiteOfHost(config.sites) } : {}),
    route,
    snapshot: () => sync.current,
    // The plugin is registered below, before any request can arrive.
    isUnderPressure: () => app.isUnderPressure(),
    isClosing,
    requestId: requestIdFrom,
    requestIdOnHits: config.requestIdOnHits,
    clientOf: (req) => clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted),
    onShed: () => app.log.debug({ reason: 'under pressure' }, 'load shed: 503'),
    logger: app.log,
  })
  const afterAnswer = createAfterAnswer(app.log, options.events)
  await registerLoadShedding(app, config, route, (reason) => app.log.debug({ reason }, 'load shed: 503'))
  registerServeRoutes(app, serve, mount.root)
  return {
    pages,
    fastPath: config.fastPath ? createFastPath({ serve, isClosing, afterAnswer, pagesPath: mount.pagesPath }) : undefined,
    registerAnswerHooks: () => registerAnswerHooks(app, { afterAnswer, isClosing, route }),
  }
}
