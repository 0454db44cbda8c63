/**
 * Answers the three pages views from the snapshot, the rendered-list cache and the read-through
 * cache. Pure of Fastify: it takes a parsed request and returns an {@link HttpAnswer}. This module
 * is the order the views' steps run in and the wiring of their parts: the views' own rules
 * (`pages-views.ts`), index answers' headers (`index-answers.ts`) and bodies (`list-bodies.ts`),
 * forward plans (`forward-plans.ts`) and reading them through (`read-forward.ts`).
 * @module
 */
import type { ReadThrough } from '../cache/read-through.js'
import { createKnownAbsentPerSnapshot } from '../query/known-absent.js'
import { parseQueryParams } from '../query/query-params.js'
import { notAcceptableIn, wagtailErrors, type WagtailError } from '../query/wagtail-messages.js'
import type { Snapshot } from '../tree/snapshot.js'
import { DEFAULT_MOUNT, type ApiMount } from '../config/api-mount.js'
import type { CacheTagHeader } from '../config/schema.js'
import { errorAnswer, proxyFailureAnswer, type HttpAnswer } from './answers.js'
import type { ClientCachePolicy } from './cache-headers.js'
import { createForwardPlans, forwardKey, type ForwardPlans } from './forward-plans.js'
import { createIndexAnswers } from './index-answers.js'
import { createListBodies } from './list-bodies.js'
import { detailView, findView, listView, type View, type ViewPlan } from './pages-views.js'
import { readForward, type ForwardReadOptions } from './read-forward.js'
import { createReadThroughAnswers } from './read-through-answers.js'

export interface PagesRequest {
  /** The query string after `?`, raw; `undefined` when the URL had no `?`. */
  readonly rawQuery: string | undefined
  readonly accept: string | undefined
  /** The client's address (TRUST_PROXY applied), read only when a miss spends its share of the CMS budget. */
  readonly client?: () => string | undefined
}

export interface PagesServiceOptions {
  readonly snapshot: () => Snapshot | undefined
  /** Where the pages endpoint is (find's Location, what read-through asks for); default the default mount. */
  readonly mount?: ApiMount
  /** The other Site (SITES) whose tree this serves; its forwards ask the CMS as that Site. Unset: the default Site. */
  readonly site?: string
  readonly readThrough: ReadThrough
  /** Public base of the proxy; find's Location is built from it (never from the Host header). */
  readonly baseUrl: string
  readonly renderCacheMaxBytes: number
  readonly clientCache: ClientCachePolicy
  /** Which of `Surrogate-Key` and `Cache-Tag` 200s carry (CACHE_TAG_HEADERS); none when empty. */
  readonly cacheTags: readonly CacheTagHeader[]
  /** Send `Cache-Status` (CACHE_STATUS_HEADER); default true. */
  readonly cacheStatus?: boolean
  readonly now: () => number
  readonly logger: { warn(details: object, message: string): void }
  /**
   * Whether the CMS answers this instance's syncs (no failure since the last success). A CMS that
   * does, and answers a forwarded query with a 500, failed on the query's input.
   */
  readonly cmsHealthy?: () => boolean
}

export interface PagesService {
  list(request: PagesRequest): HttpAnswer | Promise<HttpAnswer>
  /** @param pathId the digits of `/pages/<id>/`, leading zeros included. */
  detail(pathId: string, request: PagesRequest): HttpAnswer | Promise<HttpAnswer>
  find(request: PagesRequest): HttpAnswer | Promise<HttpAnswer>
  /** DRF's 406 in the CMS's language, for the views' OPTIONS (which negotiate too). */
  notAcceptable(): WagtailError
}

const NOT_READY = proxyFailureAnswer(503, 'cms-shield has not loaded the page tree yet', 1)

/** Forwarded requests whose plans are kept per snapshot; past it the least recently used are forgotten. */
const MAX_PLANNED_FORWARDS = 10_000

/** Type names and find paths remembered as absent per snapshot, each; past it the oldest go. */
const MAX_KNOWN_ABSENT = 2_000

/** What `answer` needs besides the view and the request. */
interface Dispatch {
  readonly snapshot: () => Snapshot | undefined
  readonly plans: ForwardPlans
  readonly read: ForwardReadOptions
}

/**
 * What the three views share, in this order: no snapshot yet is a 503; a query planned before to
 * go to the CMS reads through at once; otherwise the view's planner decides Wagtail's error, a
 * forward (remembered for this snapshot, then read through) or an answer from the index.
 */
function answer<P extends ViewPlan>(dispatch: Dispatch, view: View<P>, pathId: string, request: PagesRequest): HttpAnswer | Promise<HttpAnswer> {
  const snapshot = dispatch.snapshot()
  if (!snapshot) return NOT_READY
  const memoKey = forwardKey(view.name, pathId, request)
  const planned = dispatch.plans.planned(snapshot, memoKey)
  if (planned) return readForward(dispatch.read, snapshot, planned, request.client?.())
  const params = parseQueryParams(request.rawQuery ?? '')
  const plan = view.plan(pathId, params, snapshot, request.accept)
  if (plan.kind === 'error') return errorAnswer(plan.error)
  if (plan.kind === 'forward') {
    const { relative, scope } = view.forward(pathId, params, snapshot)
    const forward = dispatch.plans.plan(snapshot, memoKey, view.name, relative, scope, params)
    return readForward(dispatch.read, snapshot, forward, request.client?.())
  }
  return view.index(plan as Extract<P, { kind: 'index' }>, snapshot)
}

export function createPagesService(options: PagesServiceOptions): PagesService {
  const { pagesPath, pages: pagesEndpoint } = options.mount ?? DEFAULT_MOUNT
  /** What the CMS said does not exist, under the current snapshot (`forward-plans.ts` learns it). */
  const knownAbsentOf = createKnownAbsentPerSnapshot(MAX_KNOWN_ABSENT)
  const plans = createForwardPlans({ pagesEndpoint, site: options.site, knownAbsentOf, maxPlans: MAX_PLANNED_FORWARDS })
  const indexAnswers = createIndexAnswers(options)
  const read: ForwardReadOptions = {
    readThrough: options.readThrough,
    answers: createReadThroughAnswers(options),
    plans,
    tags: indexAnswers.readThroughTags,
    logger: options.logger,
    cmsHealthy: options.cmsHealthy,
  }
  const dispatch: Dispatch = { snapshot: options.snapshot, plans, read }
  const views = {
    knownAbsentOf,
    indexAnswers,
    listBodies: createListBodies(options.renderCacheMaxBytes),
    pagesUrl: `${options.baseUrl.replace(/\/+$/, '')}${pagesPath}`,
  }
  const list = listView(views)
  const detail = detailView(views)
  const find = findView(views)

  return {
    list: (request) => answer(dispatch, list, '', request),
    detail: (pathId, request) => answer(dispatch, detail, pathId, request),
    find: (request) => answer(dispatch, find, '', request),

    notAcceptable() {
      const snapshot = options.snapshot()
      return snapshot ? notAcceptableIn(snapshot.dialect.notAcceptableText) : wagtailErrors.notAcceptable
    },
  }
}
