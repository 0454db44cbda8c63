/**
 * Answers the three pages views from the snapshot, the rendered-list cache and the read-through
 * cache. Pure of Fastify: it takes a parsed request and returns an {@link HttpAnswer}.
 * @module
 */
import { LRUCache } from 'lru-cache'
import { isProxyError, type ProxyError } from '../errors.js'
import { isOverBudget, type CachedAnswer, type ReadThrough, type ReadThroughOutcome } from '../cache/read-through.js'
import { createSupersededKeys } from '../cache/superseded-keys.js'
import { planDetail } from '../query/plan-detail.js'
import { planFind } from '../query/plan-find.js'
import { KNOWN_LISTING_PARAMETERS, planListing } from '../query/plan-listing.js'
import { FILTER_FIELDS } from '../query/plan-steps.js'
import type { ListQuery } from '../tree/page-selection.js'
import type { DetailPlan, FindPlan, ListPlan } from '../query/plan-types.js'
import { djangoUrlencode, parseQueryParams, type QueryParams } from '../query/query-params.js'
import { fieldFilterRefusal, searchRefusal } from '../query/forward-guard.js'
import { scopeDigest, scopeOfParams, scopeOfSelection, treeScope, type Scope } from '../tree/list-scope.js'
import { matchesSelection, selectPages } from '../tree/select-pages.js'
import { responseKeys, tagHeaders } from '../tree/surrogate-keys.js'
import { createSnapshotMemo } from '../tree/snapshot-memo.js'
import { absentLesson } from '../query/absent-lessons.js'
import { createKnownAbsentPerSnapshot } from '../query/known-absent.js'
import { bytesOf } from '../tree/detail-body.js'
import type { Snapshot } from '../tree/snapshot.js'
import { DEFAULT_MOUNT, type ApiMount } from '../config/api-mount.js'
import { forwardedDetailPath, forwardedFindQuery, forwardedQuery } from '../query/forwarded-query.js'
import { API_HEADERS, errorAnswer, proxyFailureAnswer, redirectAnswer, type HttpAnswer } from './answers.js'
import { cacheStatus, cachingHeaders, type ClientCachePolicy } from './cache-headers.js'
import { createReadThroughAnswers } from './read-through-answers.js'
import { etagOf } from './validators.js'
import { renderList } from './render-list.js'
import type { CacheTagHeader } from '../config/schema.js'
import { notAcceptableIn, wagtailErrors, type WagtailError } from '../query/wagtail-messages.js'

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

/** Parameters every page type has: a 500 on one of them is not blamed on its value. */
const GENERIC_PARAMETERS: ReadonlySet<string> = new Set([...KNOWN_LISTING_PARAMETERS, ...FILTER_FIELDS, 'html_path'])

/**
 * Generic parameters whose values the CMS parses in ways cms-shield can only approximate (a date
 * with non-ASCII digits: `forward-guard.ts` forwards what it cannot decide).
 */
const PARSED_BY_THE_CMS: ReadonlySet<string> = new Set(['first_published_at'])

const NOT_READY = proxyFailureAnswer(503, 'cms-shield has not loaded the page tree yet', 1)

type ViewPlan = ListPlan | DetailPlan | FindPlan

/** One view's own steps; `answer()` in createPagesService runs them in the order they share. */
interface View<P extends ViewPlan> {
  /** How its forwards are remembered, and how what the CMS answers is learnt from. */
  readonly memo: 'list' | 'detail' | 'find'
  readonly learner: 'listing' | 'detail' | 'find'
  plan(pathId: string, params: QueryParams, snapshot: Snapshot, accept: string | undefined): P
  /** The CMS-relative URL and the scope of a forward. */
  forward(pathId: string, params: QueryParams, snapshot: Snapshot): { relative: string; scope: Scope }
  index(plan: Extract<P, { kind: 'index' }>, snapshot: Snapshot): HttpAnswer
}

/** Forwarded requests whose plans are kept per snapshot; past it the memory starts over. */
const MAX_PLANNED_FORWARDS = 10_000

/** Type names and find paths remembered as absent per snapshot, each; past it the oldest go. */
const MAX_KNOWN_ABSENT = 2_000

/** A query the CMS answers, as `forwardOf` worked it out. */
interface Forward {
  /** Path and query relative to the CMS's API router (`pages/?search=…`): what read-through asks for. */
  readonly relative: string
  /** The same relative to the pages endpoint (`?search=…`), as the log says it. */
  readonly viewPath: string
  /** The pages its answer depends on. */
  readonly scope: Scope
  readonly params: QueryParams
  /** False for answers never replayed (`order=random`). */
  readonly store: boolean
  /** `scopeDigest` of `scope` under the snapshot it was planned with. */
  readonly digest: string
  /** The read-through key: digest and query. */
  readonly key: string
  /** Reads what the CMS's answer teaches about what does not exist (`learnerOf`). */
  readonly learn?: ((answer: CachedAnswer, outcome: ReadThroughOutcome) => void) | undefined
}

/** Everything a view's plan depends on besides the snapshot. */
function forwardKey(view: 'list' | 'detail' | 'find', pathId: string, request: PagesRequest): string {
  return `${view}\u0000${pathId}\u0000${request.rawQuery ?? '\u0001'}\u0000${request.accept ?? '\u0001'}`
}

/**
 * What selects and renders a list, bar its pages: with the digest of the pages the list's scope
 * covers (`list-scope.ts`) it keys the rendered-list cache. A list whose scope did not change
 * between two snapshots keeps its body, and with it its ETag.
 */
function listQueryKey(query: ListQuery): string {
  const f = query.filters
  return JSON.stringify([
    query.types === null ? null : [...query.types].sort(),
    query.specific,
    f.id ?? null, f.title ?? null, f.slug ?? null, f.seoTitle ?? null, f.searchDescription ?? null, f.showInMenus ?? null,
    query.childOf ?? null, query.ancestorOf ?? null, query.descendantOf ?? null, query.locale ?? null,
    query.offset, query.limit,
  ])
}

export function createPagesService(options: PagesServiceOptions): PagesService {
  const rendered = new LRUCache<string, Buffer>({
    maxSize: options.renderCacheMaxBytes,
    sizeCalculation: (body, key) => body.length + key.length,
  })
  // Entries a newer snapshot made unreachable are dropped at once (`superseded-keys.ts`).
  const renderedDigests = createSupersededKeys()
  const forwardedDigests = createSupersededKeys()
  const base = options.baseUrl.replace(/\/+$/, '')
  const { pagesPath, pages: pagesEndpoint } = options.mount ?? DEFAULT_MOUNT
  const caching = cachingHeaders(options.clientCache)
  // Index answers are the same for every request: their header sets are built once per body.
  const indexAnswers = new WeakMap<Buffer, HttpAnswer>()
  const answers = createReadThroughAnswers(options)
  const tagNames = options.cacheTags
  function tags(snapshot: Snapshot, scope: Scope): Record<string, string> | undefined {
    if (tagNames.length === 0) return undefined
    const both: Record<CacheTagHeader, string> = tagHeaders(responseKeys(snapshot, scope))
    const chosen: Record<string, string> = {}
    for (const name of tagNames) chosen[name] = both[name]
    return chosen
  }
  // Built once: a spread of it adds `cache-status` or nothing.
  const withStatus = options.cacheStatus === false ? () => undefined : (status: string) => ({ 'cache-status': status })

  function paramsOf(request: PagesRequest): QueryParams {
    return parseQueryParams(request.rawQuery ?? '')
  }

  /**
   * The answer for an index body. A body is only ever reused for the same scope's unchanged
   * pages, so the tags computed with its first snapshot stay right. An answer of one page's scope
   * says which page (`HttpAnswer.page`), so that it can outlive a patch that left that page alone.
   */
  function indexAnswer(body: Buffer, snapshot: Snapshot, scope: Scope): HttpAnswer {
    let answer = indexAnswers.get(body)
    if (!answer) {
      answer = {
        status: 200,
        headers: { ...API_HEADERS, etag: etagOf(body), ...caching, ...withStatus(cacheStatus.index), ...tags(snapshot, scope) },
        body,
        cache: 'snapshot',
        ...(scope.kind === 'page' ? { page: scope.id } : {}),
      }
      indexAnswers.set(body, answer)
    }
    return answer
  }

  function toAnswer(stored: CachedAnswer, outcome: ReadThroughOutcome, snapshot: Snapshot, scope: Scope): HttpAnswer {
    return answers.answerOf(stored, outcome, snapshot, () => tags(snapshot, scope))
  }

  /**
   * The 4xx for a forwarded query that a CMS answering everything else (`cmsHealthy`) failed with a
   * 500 on a value only it can judge (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500): an unknown `site=` (Wagtail ≤ 7.x 500, 8.0
   * this 404), a filter on a field of the page type's own or a date it parses, a non-numeric `id` next to find's
   * `html_path`, an `order` by an API field that is no database column (Wagtail ≤ 7.0).
   * `undefined`: a 502 it is, the CMS itself is failing (a 500 on `search=` is the
   * search backend, not the input).
   */
  function cmsFailedOnInput(error: unknown, params: QueryParams | undefined): WagtailError | undefined {
    if (!params || !isProxyError(error, 'UPSTREAM_BAD_STATUS') || error.details?.['status'] !== 500) return undefined
    if (!(options.cmsHealthy?.() ?? false)) return undefined
    if (params.get('site') !== undefined) return wagtailErrors.siteNotFound
    const refusal = fieldFilterRefusal(params) ?? searchRefusal(params)
    if (refusal) return refusal
    if (params.get('html_path') !== undefined && !/^\d+$/.test(params.get('id') ?? '0')) return wagtailErrors.findNotFound
    // Wagtail ≤ 7.0 lets an API field that is no database column (`type`, `html_url`…) through
    // OrderingFilter's check and fails in the query: 7.1+'s 400 for the first field named.
    const order = params.get('order')
    if (order !== undefined && order !== '' && order !== 'random') return wagtailErrors.cannotOrderBy(order.split(',')[0]!)
    return params.keys().some((key) => !GENERIC_PARAMETERS.has(key) || PARSED_BY_THE_CMS.has(key)) ? wagtailErrors.cmsRejectedQuery : undefined
  }

  /**
   * A forwarded query, worked out once per snapshot: what to ask the CMS, what its answer depends
   * on, and its cache key. The same URL under the same snapshot is always forwarded the same way,
   * so repeated reads (hits on a hot `search=`) skip parsing and planning.
   */
  function forwardOf(snapshot: Snapshot, viewPath: string, scope: Scope, params: QueryParams, learn?: Forward['learn']): Forward {
    const relative = `${pagesEndpoint}/${viewPath}`
    // `order=random` is a new order every time (docs/wagtail-compatibility.md#ordering): never replay it.
    const store = params.get('order') !== 'random'
    // Keyed by the digest of the pages the answer depends on (the whole tree for search or
    // find): a change there means a new key on every instance, a change elsewhere keeps it.
    const digest = scopeDigest(snapshot, scope)
    return { relative, viewPath, scope, params, store, key: `${digest}:${relative}`, digest, learn }
  }

  /**
   * What the CMS's answer to a forwarded query can teach about what does not exist, for later
   * queries under the same snapshot (`absent-lessons.ts`); `undefined` when it can teach nothing.
   */
  function learnerOf(view: 'listing' | 'detail' | 'find', memoKey: string, params: QueryParams, snapshot: Snapshot): Forward['learn'] {
    const lesson = absentLesson(view, params, snapshot, knownAbsentOf(snapshot))
    if (!lesson) return undefined
    return (answer, outcome) => {
      // A stale answer may be older than the snapshot: learn only from what the CMS says now.
      if (outcome === 'stale' || outcome === 'stale-error' || outcome === 'stale-budget') return
      // This very query is now answered here too, not replayed from its planned forward.
      if (lesson(answer.status, answer.body)) forwards.delete(memoKey)
    }
  }

  async function readThrough(snapshot: Snapshot, forward: Forward, request: PagesRequest, memoKey: string): Promise<HttpAnswer> {
    const client = request.client?.()
    try {
      const { answer, outcome } = await options.readThrough.get(forward.key, forward.relative, { store: forward.store, ...(client === undefined ? {} : { client }) })
      // Noted once answered, as the plan is (`forwards` below): a refused query stores nothing.
      const dead = forward.store ? forwardedDigests.replace(forward.relative, forward.digest) : undefined
      if (dead !== undefined) options.readThrough.forget(`${dead}:${forward.relative}`)
      forward.learn?.(answer, outcome)
      return toAnswer(answer, outcome, snapshot, forward.scope)
    } catch (error) {
      if (isOverBudget(error)) {
        // Only forwards the CMS answered are worth keeping: a flood of distinct refused queries
        // would otherwise fill the memory with plans never used again, and the garbage collector
        // would copy each of them into the old generation (docs/performance.md, "Refusals").
        forwards.delete(memoKey)
        return answers.refused(error as ProxyError, client)
      }
      // `code` at the top level, as on the sync's failure line, so one filter finds both.
      options.logger.warn({ err: error, code: isProxyError(error) ? error.code : undefined, query: forward.viewPath }, 'read-through to the CMS failed')
      const failure = isProxyError(error) ? error : undefined
      if (failure?.statusCode === 504) return answers.failed(failure)
      const blamed = cmsFailedOnInput(error, forward.params)
      return blamed ? errorAnswer(blamed) : answers.failed(failure)
    }
  }

  /** Forwards planned under the current snapshot, by view and request (`forwardOf`). */
  const forwards = createSnapshotMemo<Forward>(MAX_PLANNED_FORWARDS)
  /** What the CMS said does not exist, under the current snapshot (`learnerOf`). */
  const knownAbsentOf = createKnownAbsentPerSnapshot(MAX_KNOWN_ABSENT)

  /**
   * What the three views share, in this order: no snapshot yet is a 503; a query planned before to
   * go to the CMS reads through at once; otherwise the view's planner decides Wagtail's error, a
   * forward (remembered for this snapshot, then read through) or an answer from the index.
   */
  function answer<P extends ViewPlan>(view: View<P>, pathId: string, request: PagesRequest): HttpAnswer | Promise<HttpAnswer> {
    const snapshot = options.snapshot()
    if (!snapshot) return NOT_READY
    const memoKey = forwardKey(view.memo, pathId, request)
    const planned = forwards.get(snapshot, memoKey)
    if (planned) return readThrough(snapshot, planned, request, memoKey)
    const params = paramsOf(request)
    const plan = view.plan(pathId, params, snapshot, request.accept)
    if (plan.kind === 'error') return errorAnswer(plan.error)
    if (plan.kind === 'forward') {
      const { relative, scope } = view.forward(pathId, params, snapshot)
      const learn = learnerOf(view.learner, memoKey, params, snapshot)
      return readThrough(snapshot, forwards.set(memoKey, forwardOf(snapshot, relative, scope, params, learn)), request, memoKey)
    }
    return view.index(plan as Extract<P, { kind: 'index' }>, snapshot)
  }

  const listView: View<ListPlan> = {
    memo: 'list',
    learner: 'listing',
    plan: (_pathId, params, snapshot, accept) => planListing(params, snapshot, accept, knownAbsentOf(snapshot)),
    forward: (_pathId, params, snapshot) => ({ relative: forwardedQuery(params), scope: scopeOfParams(snapshot, (key) => params.get(key)) }),
    index(plan, snapshot) {
      const scope = scopeOfSelection(snapshot, plan.query)
      const query = listQueryKey(plan.query)
      const digest = scopeDigest(snapshot, scope)
      let body = rendered.get(`${digest}\u0000${query}`)
      if (!body) {
        const matching = selectPages(snapshot, plan.query)
        const { offset, limit } = plan.query
        const items = offset >= matching.length ? [] : matching.slice(offset, offset + limit)
        body = renderList(matching.length, items, plan.query.specific)
        rendered.set(`${digest}\u0000${query}`, body)
        const dead = renderedDigests.replace(query, digest)
        if (dead !== undefined) rendered.delete(`${dead}\u0000${query}`)
      }
      return indexAnswer(body, snapshot, scope)
    },
  }

  const detailView: View<DetailPlan> = {
    memo: 'detail',
    learner: 'detail',
    plan: (pathId, params, snapshot, accept) => planDetail(pathId, params, snapshot, accept, knownAbsentOf(snapshot)),
    forward(pathId, params) {
      // A detail depends on its page (and its parent, which its bytes embed); tree filters on
      // a detail (`?child_of=`) make it depend on more.
      const treeFiltered = ['child_of', 'descendant_of', 'ancestor_of'].some((key) => params.get(key) !== undefined)
      const id = Number(BigInt(pathId))
      const scope: Scope = treeFiltered || !Number.isSafeInteger(id) ? treeScope : { kind: 'page', id }
      return { relative: `${forwardedDetailPath(pathId)}${forwardedQuery(params)}`, scope }
    },
    index(plan, snapshot) {
      const page = plan.id === undefined ? undefined : snapshot.byId.get(plan.id)
      if (!page || !matchesSelection(snapshot, page, plan.selection)) return errorAnswer(wagtailErrors.noMatch(plan.modelName))
      return indexAnswer(bytesOf(page.detail), snapshot, { kind: 'page', id: page.id })
    },
  }

  const findView: View<FindPlan> = {
    memo: 'find',
    learner: 'find',
    plan: (_pathId, params, snapshot, accept) => planFind(params, snapshot, accept, knownAbsentOf(snapshot)),
    forward: (_pathId, params) => ({ relative: `find/${forwardedFindQuery(params)}`, scope: treeScope }),
    index(plan, snapshot) {
      if (plan.id === undefined) return errorAnswer(wagtailErrors.findNotFound)
      const query = snapshot.dialect.findKeepsQuery ? `?${djangoUrlencode(plan.forwardQuery)}` : ''
      return redirectAnswer(`${base}${pagesPath}${plan.id}/${query}`)
    },
  }

  return {
    list: (request) => answer(listView, '', request),
    detail: (pathId, request) => answer(detailView, pathId, request),
    find: (request) => answer(findView, '', request),

    notAcceptable() {
      const snapshot = options.snapshot()
      return snapshot ? notAcceptableIn(snapshot.dialect.notAcceptableText) : wagtailErrors.notAcceptable
    },

  }
}
