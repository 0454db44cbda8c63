/**
 * The serving core of the pages API: one request in (method, raw URL, the headers that matter),
 * one answer and its log/metric labels out. Both writers, the raw `node:http` fast path
 * (`fast-path.ts`) and the Fastify routes (`fastify-writer.ts`), only copy its result onto the
 * socket, so they cannot disagree: routing (`api-router.ts`), DRF's OPTIONS/405, conditional
 * requests, load shedding, a failing view, the request id and the `Connection: close` rule while
 * closing are all decided here. Pure of Fastify and `node:http`.
 *
 * Synchronous answers depend only on the snapshot, the URL and `Accept`, so GET/HEAD answers are
 * remembered per snapshot by exact URL: a repeated read costs one Map lookup and allocates only
 * its {@link Served}.
 * @module
 */
import type { CacheOutcome, RouteName } from '../observability/shield-events.js'
import { negotiate } from '../query/negotiate.js'
import { parseQueryParams } from '../query/query-params.js'
import { createSnapshotMemo } from '../tree/snapshot-memo.js'
import type { Snapshot } from '../tree/snapshot.js'
import {
  appendSlashAnswer,
  errorAnswer,
  INTERNAL_ERROR_ANSWER,
  methodNotAllowedAnswer,
  NOT_FOUND_ANSWER,
  OPTIONS_ANSWER,
  OVERLOADED_ANSWER,
  type HttpAnswer,
} from './answers.js'
import { apiRouteName, createApiRouter, pathOf, type ApiTarget, type RouteApiPath, type ViewTarget } from './api-router.js'
import type { EndpointsService } from './endpoints-service.js'
import { conditionalAnswer } from './conditional-answer.js'
import type { PagesRequest, PagesService } from './pages-service.js'

type Header = string | string[] | undefined

/** What serve reads of a request: structurally a Node `IncomingMessage`, so writers pass theirs as is. */
export interface ServeRequest {
  readonly method?: string | undefined
  readonly url?: string | undefined
  readonly headers: { readonly accept?: Header; readonly 'if-none-match'?: Header; readonly 'x-request-id'?: Header; readonly host?: Header }
}

/** The bounded labels of one answer; shared by every request that gets the same answer on the same route. */
export interface ServeLabels {
  readonly route: RouteName
  readonly cache: CacheOutcome
  readonly status: number
}

export interface Served {
  readonly answer: HttpAnswer
  readonly labels: ServeLabels
  /** What `X-Request-Id` says; undefined: the answer carries none (a hit, with REQUEST_ID_ON_HITS=false). */
  readonly requestId: string | undefined
}

/**
 * `undefined` when the URL is not the pages API's (the caller's other routes answer it).
 * @param requestId the id the caller already gave the request (Fastify's); else one is made from `X-Request-Id`.
 */
export type Serve<R extends ServeRequest> = (request: R, requestId?: string) => Served | Promise<Served> | undefined

export interface ServeOptions<R extends ServeRequest> {
  readonly pages: PagesService
  /** The router's other endpoints (API_ENDPOINTS); without it they are not routed to. */
  readonly endpoints?: EndpointsService
  /** The API's routing (`createApiRouter`); default the default mount's. */
  readonly route?: RouteApiPath
  /**
   * The other Site (SITES) whose tree this core answers (`serve-by-site.ts`); unset for the default
   * Site's. The router's other endpoints are asked as it.
   */
  readonly site?: string
  readonly snapshot: () => Snapshot | undefined
  readonly isUnderPressure: () => boolean
  readonly isClosing: () => boolean
  readonly requestId: (header: Header) => string
  /**
   * Give hits (answers from the snapshot or a fresh read-through entry, and their 304s) a request
   * id when the client sent none (REQUEST_ID_ON_HITS); default true. Off, a hit's header block is
   * the same for every request, and writing it costs no id.
   */
  readonly requestIdOnHits?: boolean
  /** The client's address, for its share of the CMS budget: read only when a miss spends it. */
  readonly clientOf?: (request: R) => string | undefined
  readonly onShed?: () => void
  readonly logger: { error(details: object, message: string): void }
  /** Remembered answers per snapshot; past it, the least recently used are forgotten. */
  readonly maxEntries?: number
}

type ApiRouteName = ReturnType<typeof apiRouteName>

interface Remembered {
  readonly answer: HttpAnswer
  readonly route: ApiRouteName
  /** `labelsOf(answer, route)`, kept with it: a plain hit then looks nothing up. */
  readonly labels: ServeLabels
}

/** One labels object per answer and route, so a hit allocates none. */
const labelsByAnswer = new WeakMap<HttpAnswer, Partial<Record<ApiRouteName, ServeLabels>>>()

function labelsOf(answer: HttpAnswer, route: ApiRouteName): ServeLabels {
  let byRoute = labelsByAnswer.get(answer)
  if (!byRoute) labelsByAnswer.set(answer, (byRoute = {}))
  return (byRoute[route] ??= Object.freeze({ route, cache: answer.cache ?? 'none', status: answer.status }))
}

/** Each answer's closing twin, built once (closing lasts a moment; its answers repeat). */
const closingTwins = new WeakMap<HttpAnswer, HttpAnswer>()

/**
 * Once closing, a request still in flight gets `Connection: close` (RFC 9112 §9.6): the server
 * closed its idle connections when closing began, and a kept-alive one would hold the exit back.
 */
function closingTwin(answer: HttpAnswer): HttpAnswer {
  let twin = closingTwins.get(answer)
  if (!twin) closingTwins.set(answer, (twin = { ...answer, headers: { ...answer.headers, connection: 'close' } }))
  return twin
}

const firstOf = (header: Header): string | undefined => (Array.isArray(header) ? header[0] : header)

/**
 * What a swap keeps of the answers remembered by URL: after a patch in place of the snapshot they
 * were worked out under (same pages at the same places, same dialect), the detail answers of the
 * pages it did not replace, which read nothing else (`HttpAnswer.page`). Without this, every edit
 * sent each hot URL down the slow path once more, right when the swap's own work runs
 * (docs/performance.md, "What a swap costs readers").
 */
function keptAcrossPatch(previous: Snapshot, next: Snapshot): ((remembered: Remembered) => boolean) | undefined {
  const patched = next.patched
  if (patched === undefined || patched.from !== previous.fingerprint) return undefined
  if (JSON.stringify(previous.dialect) !== JSON.stringify(next.dialect)) return undefined
  const replaced = new Set(patched.ids)
  return (remembered) => remembered.answer.page !== undefined && !replaced.has(remembered.answer.page)
}

/** DRF's dispatch: GET and HEAD run the view, OPTIONS negotiates first, anything else is a 405. */
function viewAnswer<R extends ServeRequest>(options: ServeOptions<R>, method: string, target: ApiTarget, rawQuery: string | undefined, request: R, site: string | undefined): HttpAnswer | Promise<HttpAnswer> {
  const { pages, endpoints } = options
  const accept = firstOf(request.headers.accept)
  const endpoint = 'endpoint' in target ? target.endpoint : undefined
  if (endpoint !== undefined && !endpoints) return NOT_FOUND_ANSWER
  if (method === 'OPTIONS') {
    const refused = negotiate(parseQueryParams(rawQuery ?? ''), accept, pages.notAcceptable())
    if (refused) return errorAnswer(refused)
    return endpoint === undefined ? OPTIONS_ANSWER : endpoints!.options(endpoint)
  }
  if (method !== 'GET' && method !== 'HEAD') return methodNotAllowedAnswer(method)
  const clientOf = options.clientOf
  const input: PagesRequest = { rawQuery, accept, ...(clientOf ? { client: () => clientOf(request) } : {}) }
  if (endpoint !== undefined) return endpoints!.answer(endpoint, target as ViewTarget, input, site)
  switch (target.kind) {
    case 'list': return pages.list(input)
    case 'find': return pages.find(input)
    case 'detail': return pages.detail(target.id, input)
    default: return NOT_FOUND_ANSWER
  }
}

/** The answer for a routed request: Django's 404, the 301 adding a slash, or the view's. */
function answerOf<R extends ServeRequest>(options: ServeOptions<R>, method: string, url: string, path: string, target: ApiTarget, request: R, site: string | undefined): HttpAnswer | Promise<HttpAnswer> {
  const q = url.indexOf('?')
  const rawQuery = q < 0 ? undefined : url.slice(q + 1)
  switch (target.kind) {
    case 'not-found': return NOT_FOUND_ANSWER
    case 'append-slash': return appendSlashAnswer(path, rawQuery)
    default: return viewAnswer(options, method, target, rawQuery, request, site)
  }
}

export function createServe<R extends ServeRequest>(options: ServeOptions<R>): Serve<R> {
  const { site } = options
  const route = options.route ?? createApiRouter()
  const memo = createSnapshotMemo<Remembered>(options.maxEntries ?? 20_000, keptAcrossPatch)

  const idOnHits = options.requestIdOnHits ?? true

  function idOf(request: R, requestId: string | undefined, answer: HttpAnswer): string | undefined {
    const header = request.headers['x-request-id']
    if (!idOnHits && header === undefined && (answer.cache === 'snapshot' || answer.cache === 'hit')) return undefined
    return requestId ?? options.requestId(header)
  }

  /** `labels`: the labels of `answer` on `route`, when the caller has them at hand. */
  function served(request: R, requestId: string | undefined, answer: HttpAnswer, route: ApiRouteName, labels?: ServeLabels): Served {
    let full = conditionalAnswer(answer, firstOf(request.headers['if-none-match']))
    if (options.isClosing()) full = closingTwin(full)
    return { answer: full, labels: full === answer && labels ? labels : labelsOf(full, route), requestId: idOf(request, requestId, full) }
  }

  function failed(error: unknown, request: R, requestId: string | undefined, route: ApiRouteName): Served {
    const result = served(request, requestId, INTERNAL_ERROR_ANSWER, route)
    options.logger.error({ err: error, reqId: result.requestId, method: request.method, url: request.url }, 'request failed')
    return result
  }

  return (request, requestId) => {
    const method = request.method ?? 'GET'
    const url = request.url ?? '/'
    const shedding = options.isUnderPressure()
    const snapshot = options.snapshot()
    // Remembered only for a loaded snapshot, and only the API's URLs: a hit needs no routing.
    let key: string | undefined
    if (!shedding && snapshot && (method === 'GET' || method === 'HEAD')) {
      const accept = firstOf(request.headers.accept)
      key = accept === undefined ? url : `${url}\u0000${accept}`
      const remembered = memo.get(snapshot, key)
      if (remembered) return served(request, requestId, remembered.answer, remembered.route, remembered.labels)
    }

    const path = pathOf(url)
    const target = route(path)
    if (target === undefined) return undefined
    const routeName = apiRouteName(target)
    if (shedding) {
      options.onShed?.()
      return served(request, requestId, OVERLOADED_ANSWER, routeName)
    }
    let answer: HttpAnswer | Promise<HttpAnswer>
    try {
      answer = answerOf(options, method, url, path, target, request, site)
    } catch (error) {
      return failed(error, request, requestId, routeName)
    }
    if (answer instanceof Promise) {
      return answer.then(
        (resolved) => served(request, requestId, resolved, routeName),
        (error: unknown) => failed(error, request, requestId, routeName),
      )
    }
    if (key !== undefined) memo.set(key, { answer, route: routeName, labels: labelsOf(answer, routeName) })
    return served(request, requestId, answer, routeName)
  }
}
