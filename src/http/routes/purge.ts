/**
 * The PURGE receiver: point Wagtail's frontend_cache HTTPBackend at cms-shield (`LOCATION`) and a
 * publish or unpublish refreshes the page at once instead of at the next sync (docs/wagtail-compatibility.md#the-purge-protocol).
 *
 * Wire format (docs/wagtail-compatibility.md#wire-format): `PURGE <path+query>` on any path, `Host:` the purged URL's host, no
 * body, no credentials. The target is either a page URL (`/blog-one/`) or, with
 * `WAGTAILAPI_USE_FRONTENDCACHE`, the API detail URL `/api/v1/cms/pages/<id>/` (docs/wagtail-compatibility.md#what-wagtail-purges).
 * Wagtail calls `urlopen` without a timeout, inside the editor's publish request (docs/wagtail-compatibility.md#timing), so
 * the answer is immediate: the refresh is only requested, and the sync coalesces bursts.
 *
 * Routing: PURGE is handled in a root `onRequest` hook, not by a route. Fastify 5 does not know
 * the method unless `addHttpMethod('PURGE')` is called, and once it is, every `app.all()`
 * registered afterwards (the pages API's `/api/v1/cms/pages/*`) claims PURGE on its paths and
 * answers DRF's 405. A hook runs before routing decides anything: for matched routes and for the
 * not-found handler alike, whatever order things were registered in, and without the method being
 * added at all (Node's parser accepts PURGE; Fastify routes it to the not-found context, whose
 * hooks still run). It must be installed on the root instance: a hook inside an encapsulated
 * plugin would only see that plugin's routes.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ApiMount } from '../../config/api-mount.js'
import type { RequestRefresh } from '../../sync/refresh-request.js'
import { resolvePurgeTarget, type PurgeTarget } from '../../tree/html-url-index.js'
import type { Snapshot } from '../../tree/snapshot.js'
import type { PurgeAccess } from '../purge-access.js'
import type { LogSink } from '../../observability/log-sink.js'

export type PurgeLogger = Pick<LogSink, 'info' | 'warn' | 'error'>

export interface PurgeRouteOptions {
  /** The snapshot to resolve page URLs against; `undefined` before the first sync. */
  readonly snapshot: () => Snapshot | undefined
  readonly requestRefresh: RequestRefresh
  /** Where the API's router is, to tell its endpoints' URLs; default the default mount. */
  readonly mount?: ApiMount
  /** A PURGE of one of the router's other endpoints: its answers start a new generation. */
  readonly purgeEndpoint?: (endpoint: string) => void
  /**
   * The trees of the CMS's other Sites (SITES): a PURGE whose Host names one is resolved against
   * its tree and refreshes it (Wagtail sends a page's URL with its Site's host); a page id the named
   * tree does not hold is refreshed in the tree that does (its API URL, purged on the API's host).
   */
  readonly otherTrees?: { of(host: string | undefined): PurgeTree | undefined; readonly all: readonly PurgeTree[] }
  readonly access: PurgeAccess
  readonly logger: PurgeLogger
  /**
   * For metrics: called once per PURGE, `accepted` as soon as the source is allowed (a failure to
   * request the refresh is logged and answered 500 on top of that).
   */
  readonly onPurge?: (result: 'accepted' | 'refused', target: PurgeTarget['kind']) => void
}

/** One Site's tree, as a PURGE reaches it. */
export interface PurgeTree {
  snapshot(): Snapshot | undefined
  readonly requestRefresh: RequestRefresh
}

export const PURGE_METHOD = 'PURGE'

const REFUSED_BODY = { message: 'PURGE not allowed from this address' }
const FAILED_BODY = { message: 'the refresh could not be requested' }

/** Answers every PURGE, on any path, before any route sees it (see the module comment for why a hook). */
export function registerPurgeRoute(app: FastifyInstance, options: PurgeRouteOptions): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method !== PURGE_METHOD) return done()
    // Answering from the hook ends the request here: no route, no body parsing.
    handlePurge(request, reply, options)
  })
}

/** The tree that holds page `id`: the one the PURGE named, else any that does, else the one named (a new page). */
function holderOf(id: number, named: PurgeTree, trees: readonly PurgeTree[]): PurgeTree {
  if (named.snapshot()?.byId.has(id) ?? false) return named
  return trees.find((tree) => tree.snapshot()?.byId.has(id) ?? false) ?? named
}

function handlePurge(request: FastifyRequest, reply: FastifyReply, options: PurgeRouteOptions): void {
  const url = request.raw.url ?? '/'
  const host = request.headers.host
  // The socket's own peer: X-Forwarded-For and friends are written by whoever sends the request.
  const remoteAddress = request.socket.remoteAddress
  const byDefault: PurgeTree = { snapshot: options.snapshot, requestRefresh: options.requestRefresh }
  const tree = options.otherTrees?.of(host) ?? byDefault
  const target = resolvePurgeTarget(tree.snapshot(), host, url, options.mount)

  if (!options.access.check(remoteAddress, request.headers['x-purge-token'])) {
    options.logger.warn({ remoteAddress, host, url, target: target.kind }, 'purge refused: source not allowed and no valid X-Purge-Token')
    options.onPurge?.('refused', target.kind)
    void reply.code(403).header('cache-control', 'no-store').send(REFUSED_BODY)
    return
  }

  options.onPurge?.('accepted', target.kind)
  try {
    // A known page is refreshed in place when only its content changed, and with a listing
    // pass otherwise (the sync decides, `refresh-in-place.ts`); any other URL gets the pass.
    if (target.kind === 'endpoint') options.purgeEndpoint?.(target.endpoint)
    else if (target.kind === 'page') holderOf(target.id, tree, [byDefault, ...(options.otherTrees?.all ?? [])]).requestRefresh({ ids: [target.id], reason: 'purge' })
    else tree.requestRefresh({ listing: true, reason: 'purge' })
  } catch (error) {
    // Wagtail only logs a failed purge; a 500 at least puts it in the CMS's log too.
    options.logger.error({ err: error, host, url, target: target.kind }, 'purge accepted but the refresh could not be requested')
    void reply.code(500).header('cache-control', 'no-store').send(FAILED_BODY)
    return
  }
  options.logger.info({ remoteAddress, host, url, target: target.kind, ...(target.kind === 'page' ? { id: target.id } : {}) }, 'purge accepted')
  void reply
    .code(200)
    .header('cache-control', 'no-store')
    .send(target.kind === 'page' ? { status: 'ok', target: 'page', id: target.id } : { status: 'ok', target: target.kind })
}
