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
import { createShareOf } from '../http/frontend-clients.js'
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
import type { SiteCore } from './site-core.js'
import { bySite } from '../http/serve-by-site.js'

export interface ServingParts {
  readonly pages: PagesService
  /** The raw server's first try; undefined with FAST_PATH=false. */
  readonly fastPath: FastPath | undefined
  /** The hooks that follow every Fastify answer: registered last (see `registerAnswerHooks`). */
  registerAnswerHooks(): void
}

export interface ServingOptions {
  readonly config: Config
  /** The default Site's tree, answered for any Host that names no other Site. */
  readonly core: Pick<SiteCore, 'sync'>
  /** The other Sites' trees (SITES), each answered for a Host that names it. */
  readonly others: ReadonlyArray<Pick<SiteCore, 'site' | 'sync'>>
  readonly readThrough: ReadThrough
  /** The generation of each other endpoint's read-through answers (a PURGE starts a new one). */
  readonly endpointGenerations: Pick<EndpointGenerations, 'of'>
  readonly events: ShieldEvents
  readonly now: () => number
}

export async function composeServing(app: FastifyInstance, options: ServingOptions): Promise<ServingParts> {
  const { config } = options
  const { sync } = options.core
  const trusted = config.trustProxy
  const shareOf = createShareOf({ addresses: config.frontendClients, token: config.frontendToken })
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
    negativeMaxAgeMs: config.cacheNegativeTtlMs,
  }
  // Reads its Site's snapshot on every request: a swap is seen by the next one.
  const pagesOf = (tree: SyncService, site?: string) => createPagesService({
    snapshot: () => tree.current,
    mount,
    ...(site === undefined ? {} : { site }),
    readThrough: options.readThrough,
    baseUrl: config.baseUrl,
    renderCacheMaxBytes: config.renderCacheMaxBytes,
    cacheTags: config.cacheTagHeaders,
    cacheStatus: config.cacheStatusHeader,
    clientCache,
    now: options.now,
    logger: app.log,
    cmsHealthy: () => tree.status.consecutiveFailures === 0,
  })
  const pages = pagesOf(sync)
  const endpoints = mount.endpoints.length === 0 ? undefined : createEndpointsService({
    readThrough: options.readThrough,
    cacheTags: config.cacheTagHeaders,
    cacheStatus: config.cacheStatusHeader,
    clientCache,
    now: options.now,
    generationOf: options.endpointGenerations.of,
    notAcceptable: () => pages.notAcceptable(),
    cmsHealthy: () => sync.status.consecutiveFailures === 0,
    logger: app.log,
  })
  let closing = false
  const isClosing = () => closing
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  const serveOf = (tree: SyncService, treePages: PagesService, site: string | undefined) => createServe<IncomingMessage>({
    pages: treePages,
    ...(endpoints ? { endpoints } : {}),
    ...(site === undefined ? {} : { site }),
    route,
    snapshot: () => tree.current,
    // The plugin is registered below, before any request can arrive.
    isUnderPressure: () => app.isUnderPressure(),
    isClosing,
    requestId: requestIdFrom,
    requestIdOnHits: config.requestIdOnHits,
    clientOf: (req) => shareOf(clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted), req.headers['x-frontend-token']),
    onShed: () => app.log.debug({ reason: 'under pressure' }, 'load shed: 503'),
    logger: app.log,
  })
  const serve = bySite(
    serveOf(sync, pages, undefined),
    options.others.map((other) => [other.site!, serveOf(other.sync, pagesOf(other.sync, other.site), other.site)] as const),
    createSiteOfHost(config.sites),
  )
  const afterAnswer = createAfterAnswer(app.log, options.events)
  await registerLoadShedding(app, config, route, (reason) => app.log.debug({ reason }, 'load shed: 503'))
  registerServeRoutes(app, serve, mount.root)
  return {
    pages,
    fastPath: config.fastPath ? createFastPath({ serve, isClosing, afterAnswer, pagesPath: mount.pagesPath }) : undefined,
    registerAnswerHooks: () => registerAnswerHooks(app, { afterAnswer, isClosing, route }),
  }
}
