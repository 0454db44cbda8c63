/**
 * The router's other endpoints (API_ENDPOINTS: Wagtail's `images` and `documents`, or an
 * operator's own), answered read-through as a whole: nothing of them is in the snapshot. They get
 * everything read-through has (both cache tiers, coalescing, the budget, stale answers while the
 * CMS fails, `Cache-Status`, purge keys). Their `detail_url`s point at BASE_URL as the pages' do
 * (`read-through-loader.ts`); `download_url` and media URLs are left as the CMS wrote them
 * (docs/wagtail-compatibility.md#other-endpoints).
 *
 * Nothing here validates a query: the CMS's own answer, 400s included, is what is cached and
 * replayed. Pure of Fastify.
 * @module
 */
import { isProxyError, type ProxyError } from '../errors.js'
import { isOverBudget, type ReadThrough } from '../cache/read-through.js'
import { forwardedDetailPath, forwardedFindQuery, forwardedQuery } from '../query/forwarded-query.js'
import { negotiate } from '../query/negotiate.js'
import { parseQueryParams } from '../query/query-params.js'
import { ALL_PAGES_KEY, endpointKey } from '../tree/surrogate-keys.js'
import type { CacheTagHeader } from '../config/schema.js'
import type { WagtailError } from '../query/wagtail-messages.js'
import { errorAnswer, jsonAnswer, type HttpAnswer } from './answers.js'
import type { ViewTarget } from './api-router.js'
import type { PagesRequest } from './pages-service.js'
import { chosenTagHeaders } from './purge-tags.js'
import { forwardedFailedOnInput } from './cms-blame.js'
import { createReadThroughAnswers, type ReadThroughAnswersOptions } from './read-through-answers.js'

export interface EndpointsServiceOptions extends ReadThroughAnswersOptions {
  readonly readThrough: ReadThrough
  /** Which of `Surrogate-Key` and `Cache-Tag` 200s carry (CACHE_TAG_HEADERS); none when empty. */
  readonly cacheTags: readonly CacheTagHeader[]
  /**
   * The generation of an endpoint's answers: a PURGE of one of its URLs starts a new one, and
   * answers of an older one are never read again (`endpoint-generations.ts`).
   */
  readonly generationOf: (endpoint: string) => string
  /** DRF's 406 in the CMS's language (the pages service knows it from the sync). */
  readonly notAcceptable: () => WagtailError
  /** Whether the CMS answers this instance's syncs: then its 500 is the input's fault (`cms-blame.ts`). */
  readonly cmsHealthy?: () => boolean
  readonly logger: { warn(details: object, message: string): void }
}

export interface EndpointsService {
  /**
   * GET or HEAD of one of an endpoint's views, as the default Site or one of the others (its
   * hostname) answers it: a document's `download_url` is on the requesting Site's host.
   */
  answer(endpoint: string, target: ViewTarget, request: PagesRequest, site?: string): HttpAnswer | Promise<HttpAnswer>
  /** DRF's OPTIONS answer of an endpoint's view. */
  options(endpoint: string): HttpAnswer
}

/**
 * DRF names a view after its class (`get_view_name`: `ImagesAPIViewSet` → "Images Api"); an
 * endpoint's class is the one Wagtail registers under that name by convention.
 */
function viewName(endpoint: string): string {
  const words = endpoint.split(/[_-]+/).filter((word) => word !== '')
  return [...words.map((word) => word[0]!.toUpperCase() + word.slice(1).toLowerCase()), 'Api'].join(' ')
}

/** DRF's OPTIONS answers, one per endpoint name, built once. */
const optionsAnswers = new Map<string, HttpAnswer>()

function optionsAnswer(endpoint: string): HttpAnswer {
  let answer = optionsAnswers.get(endpoint)
  if (!answer) {
    answer = jsonAnswer(200, {
      name: viewName(endpoint),
      description: '',
      renders: ['application/json', 'text/html'],
      parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
    })
    optionsAnswers.set(endpoint, answer)
  }
  return answer
}

/** The path below the API's mount that a view's request asks the CMS for. */
function relativeOf(endpoint: string, target: ViewTarget, rawQuery: string | undefined): string {
  const params = parseQueryParams(rawQuery ?? '')
  switch (target.kind) {
    case 'list': return `${endpoint}/${forwardedQuery(params)}`
    case 'detail': return `${endpoint}/${forwardedDetailPath(target.id)}${forwardedQuery(params)}`
    case 'find': return `${endpoint}/find/${forwardedFindQuery(params)}`
  }
}

/** What one endpoint's answers share: its generation's name, its purge keys. */
interface Scope {
  readonly name: string
  readonly keys: readonly string[]
}

export function createEndpointsService(options: EndpointsServiceOptions): EndpointsService {
  const answers = createReadThroughAnswers(options)
  // Tag headers per scope, built once: every answer of a scope carries the same keys.
  const tagsByScope = new Map<string, Record<string, string> | undefined>()
  function tags(scope: Scope): Record<string, string> | undefined {
    if (options.cacheTags.length === 0) return undefined
    if (!tagsByScope.has(scope.name)) tagsByScope.set(scope.name, chosenTagHeaders(options.cacheTags, () => scope.keys))
    return tagsByScope.get(scope.name)
  }
  // One answer generation per scope generation: a purge rebuilds headers as it refetches.
  const generations = new Map<string, { readonly name: string }>()
  function generation(scope: Scope): { readonly name: string } {
    const name = options.generationOf(scope.name)
    let current = generations.get(scope.name)
    if (current?.name !== name) generations.set(scope.name, (current = { name }))
    return current
  }

  async function readThrough(scope: Scope, view: ViewTarget['kind'], relative: string, request: PagesRequest): Promise<HttpAnswer> {
    const client = request.client?.()
    const current = generation(scope)
    // `order=random` is a new order every time: never replayed (docs/wagtail-compatibility.md#ordering).
    const store = !/(?:^|[?&])order=random(?:&|$)/.test(relative)
    try {
      const { answer, outcome } = await options.readThrough.get(`${scope.name}@${current.name}:${relative}`, relative, {
        store,
        ...(client === undefined ? {} : { client }),
      })
      return answers.answerOf(answer, outcome, current, () => tags(scope))
    } catch (error) {
      if (isOverBudget(error)) return answers.refused(error as ProxyError, client)
      options.logger.warn({ err: error, code: isProxyError(error) ? error.code : undefined, query: relative }, 'read-through to the CMS failed')
      const blamed = forwardedFailedOnInput(error, parseQueryParams(request.rawQuery ?? ''), view, options.cmsHealthy ?? (() => false), true)
      if (blamed) return errorAnswer(blamed)
      return answers.failed(isProxyError(error) ? error : undefined)
    }
  }

  function forwarded(scope: Scope, view: ViewTarget['kind'], relative: () => string, request: PagesRequest): HttpAnswer | Promise<HttpAnswer> {
    const refused = negotiate(parseQueryParams(request.rawQuery ?? ''), request.accept, options.notAcceptable())
    return refused ? errorAnswer(refused) : readThrough(scope, view, relative(), request)
  }

  const scopes = new Map<string, Scope>()
  const scopeOf = (endpoint: string): Scope => {
    let scope = scopes.get(endpoint)
    if (!scope) scopes.set(endpoint, (scope = { name: endpoint, keys: [ALL_PAGES_KEY, endpointKey(endpoint)] }))
    return scope
  }

  return {
    answer(endpoint, target, request, site) {
      const scope = scopeOf(endpoint)
      const asSite = site === undefined ? '' : `//${site}/`
      return forwarded(scope, target.kind, () => `${asSite}${relativeOf(endpoint, target, request.rawQuery)}`, request)
    },
    options: optionsAnswer,
  }
}
