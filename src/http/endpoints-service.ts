/**
 * What is answered read-through as a whole, with nothing of it in the snapshot: the router's other
 * endpoints (API_ENDPOINTS: Wagtail's `images` and `documents`, or an operator's own) and the
 * pages of the CMS's other Sites (SITES; the snapshot holds the default Site's tree). Each gets
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
import { siteScope } from '../cache/endpoint-generations.js'
import { forwardedDetailPath, forwardedFindQuery, forwardedQuery } from '../query/forwarded-query.js'
import { negotiate } from '../query/negotiate.js'
import { parseQueryParams } from '../query/query-params.js'
import { ALL_PAGES_KEY, endpointKey, siteKey, tagHeaders } from '../tree/surrogate-keys.js'
import type { CacheTagHeader } from '../config/schema.js'
import type { WagtailError } from '../query/wagtail-messages.js'
import { errorAnswer, jsonAnswer, type HttpAnswer } from './answers.js'
import type { ViewTarget } from './api-router.js'
import type { PagesRequest } from './pages-service.js'
import { createReadThroughAnswers, type ReadThroughAnswersOptions } from './read-through-answers.js'

export interface EndpointsServiceOptions extends ReadThroughAnswersOptions {
  readonly readThrough: ReadThrough
  /** The pages endpoint's name (PAGES_ENDPOINT), for the other Sites' pages. */
  readonly pagesEndpoint: string
  /** Which of `Surrogate-Key` and `Cache-Tag` 200s carry (CACHE_TAG_HEADERS); none when empty. */
  readonly cacheTags: readonly CacheTagHeader[]
  /**
   * The generation of a scope's answers (an endpoint's name, or `site:<hostname>`): a PURGE of one
   * of its URLs starts a new one, and answers of an older one are never read again
   * (`endpoint-generations.ts`).
   */
  readonly generationOf: (scope: string) => string
  /** DRF's 406 in the CMS's language (the pages service knows it from the sync). */
  readonly notAcceptable: () => WagtailError
  readonly logger: { warn(details: object, message: string): void }
}

export interface EndpointsService {
  /** GET or HEAD of one of an endpoint's views. */
  answer(endpoint: string, target: ViewTarget, request: PagesRequest): HttpAnswer | Promise<HttpAnswer>
  /** GET or HEAD of a pages view, as one of the CMS's other Sites (its hostname) answers it. */
  site(site: string, target: ViewTarget, request: PagesRequest): HttpAnswer | Promise<HttpAnswer>
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

/** The path below the API's mount that a view's request asks the CMS for. */
function relativeOf(endpoint: string, target: ViewTarget, rawQuery: string | undefined): string {
  const params = parseQueryParams(rawQuery ?? '')
  switch (target.kind) {
    case 'list': return `${endpoint}/${forwardedQuery(params)}`
    case 'detail': return `${endpoint}/${forwardedDetailPath(target.id)}${forwardedQuery(params)}`
    case 'find': return `${endpoint}/find/${forwardedFindQuery(params)}`
  }
}

/** What one forwarded scope's answers share: its generation's name, its purge keys. */
interface Scope {
  readonly name: string
  readonly keys: readonly string[]
}

export function createEndpointsService(options: EndpointsServiceOptions): EndpointsService {
  const answers = createReadThroughAnswers(options)
  const optionsAnswers = new Map<string, HttpAnswer>()
  // Tag headers per scope, built once: every answer of a scope carries the same keys.
  const tagsByScope = new Map<string, Record<string, string> | undefined>()
  function tags(scope: Scope): Record<string, string> | undefined {
    if (options.cacheTags.length === 0) return undefined
    if (!tagsByScope.has(scope.name)) {
      const both = tagHeaders(scope.keys)
      const chosen: Record<string, string> = {}
      for (const name of options.cacheTags) chosen[name] = both[name]
      tagsByScope.set(scope.name, chosen)
    }
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

  async function readThrough(scope: Scope, relative: string, request: PagesRequest): Promise<HttpAnswer> {
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
      return answers.failed(isProxyError(error) ? error : undefined)
    }
  }

  function forwarded(scope: Scope, relative: () => string, request: PagesRequest): HttpAnswer | Promise<HttpAnswer> {
    const refused = negotiate(parseQueryParams(request.rawQuery ?? ''), request.accept, options.notAcceptable())
    return refused ? errorAnswer(refused) : readThrough(scope, relative(), request)
  }

  const endpointScopes = new Map<string, Scope>()
  const siteScopes = new Map<string, Scope>()
  const scopeOf = (scopes: Map<string, Scope>, name: string, make: () => Scope): Scope => {
    let scope = scopes.get(name)
    if (!scope) scopes.set(name, (scope = make()))
    return scope
  }

  return {
    answer(endpoint, target, request) {
      const scope = scopeOf(endpointScopes, endpoint, () => ({ name: endpoint, keys: [ALL_PAGES_KEY, endpointKey(endpoint)] }))
      return forwarded(scope, () => relativeOf(endpoint, target, request.rawQuery), request)
    },
    site(site, target, request) {
      const scope = scopeOf(siteScopes, site, () => ({ name: siteScope(site), keys: [ALL_PAGES_KEY, siteKey(site)] }))
      return forwarded(scope, () => `//${site}/${relativeOf(options.pagesEndpoint, target, request.rawQuery)}`, request)
    },
    options(endpoint) {
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
    },
  }
}
