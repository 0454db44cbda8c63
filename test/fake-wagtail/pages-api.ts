/**
 * Computes the complete answer (status, headers, body bytes) Wagtail would give to one request: Django
 * routing, DRF's `initial()` (negotiation, auth), the method check, and the listing / detail / find views.
 * @module
 */
import { ApiError, ServerError, notFound } from './api-errors.js'
import { fieldPlanFromQuery } from './fields-param.js'
import { pageExtraFields } from './page-models.js'
import { compileQuery, paginate, queryIncludes, selectPages } from './page-query.js'
import type { QueryContext } from './page-query.js'
import type { PageStore } from './page-store.js'
import { parsePyInt, toSafeNumber } from './python-semantics.js'
import { QueryDict } from './query-dict.js'
import {
  DEFAULT_INDENT, DELETE_SESSION_COOKIE, DJANGO_404_HTML, DJANGO_500_HTML, HTML_CONTENT_TYPE, JSON_CONTENT_TYPE,
  OPTIONS_METADATA, drfJson,
} from './render.js'
import { authenticate, negotiate, type LanguageCode } from './negotiation.js'
import { decodePath, needsSlashRedirect, routePath } from './routes.js'
import type { Route, RouterLayout } from './routes.js'
import { mediaAnswer, mediaOptions } from './media-api.js'
import { serializePage } from './serialize.js'
import type { PageNode, SiteIndex, SiteUrls } from './site-index.js'
import type { FakeMedia, WagtailVersion } from './types.js'

export interface Answer {
  readonly status: number
  /** In wire order; `Content-Length` always present. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Buffer
}

export interface IncomingCall {
  readonly method: string
  /** Request target: path and optional query string. */
  readonly url: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
}

export interface ApiConfig {
  readonly store: PageStore
  readonly urls: SiteUrls
  readonly version: WagtailVersion
  readonly limitMax: number | null
  /** Django's `LANGUAGE_CODE`: the language of DRF's own messages. */
  readonly language?: LanguageCode
  /** Where the router is and which other endpoints it has. */
  readonly layout?: RouterLayout
  /** `WAGTAIL_I18N_ENABLED`, and the language codes of the CMS's Locales. */
  readonly i18n?: boolean
  readonly locales?: readonly string[]
  /** The `images` and `documents` endpoints' items. */
  readonly media?: FakeMedia
  /** Type-specific API fields that are no database column. */
  readonly columnless?: ReadonlySet<string>
}

const ALLOW = 'GET, HEAD, OPTIONS'

function header(call: IncomingCall, name: string): string | undefined {
  const value = call.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

export function splitTarget(url: string): { path: string; queryString: string } {
  const mark = url.indexOf('?')
  return mark < 0 ? { path: url, queryString: '' } : { path: url.slice(0, mark), queryString: url.slice(mark + 1) }
}

/** The whole answer to one request. */
export function answerCall(call: IncomingCall, config: ApiConfig): Answer {
  const { path: rawPath, queryString } = splitTarget(call.url)
  const path = decodePath(rawPath)
  const route = routePath(path, config.layout)
  let answer: Answer
  if (route.kind === 'endpoint') {
    answer = apiAnswer(call, route, new QueryDict(queryString), config)
  } else if (route.kind !== 'other') {
    answer = apiAnswer(call, route, new QueryDict(queryString), config)
  } else if (needsSlashRedirect(path, config.layout)) {
    const location = `${rawPath}/${queryString ? `?${queryString}` : ''}`
    answer = { status: 301, headers: [['Content-Type', HTML_CONTENT_TYPE], ['Location', location], ['Content-Length', '0']], body: Buffer.alloc(0) }
  } else {
    answer = htmlAnswer(404, DJANGO_404_HTML, undefined)
  }
  return withSessionCookie(call, answer)
}

/**
 * SessionMiddleware: a request carrying a (necessarily bogus) `sessionid` gets it deleted and `Cookie`
 * added to Vary, on every response (docs/wagtail-compatibility.md#headers; simplified: Django skips this for well-formed keys of
 * sessions it never loaded).
 */
function withSessionCookie(call: IncomingCall, answer: Answer): Answer {
  const cookie = header(call, 'cookie')
  if (!cookie || !/(?:^|;)\s*sessionid=/.test(cookie)) return answer
  const headers = answer.headers.map(([name, value]): readonly [string, string] =>
    name === 'Vary' && !value.includes('Cookie') ? [name, `${value}, Cookie`] : [name, value],
  )
  if (!headers.some(([name]) => name === 'Vary')) headers.push(['Vary', 'Cookie'])
  headers.push(['Set-Cookie', DELETE_SESSION_COOKIE])
  return { ...answer, headers }
}

export function jsonAnswer(status: number, value: unknown, indent: number, vary: string): Answer {
  const body = Buffer.from(drfJson(value, indent), 'utf8')
  return {
    status,
    headers: [['Content-Type', JSON_CONTENT_TYPE], ['Vary', vary], ['Allow', ALLOW], ['Content-Length', String(body.length)]],
    body,
  }
}

function htmlAnswer(status: number, html: string, vary: string | undefined): Answer {
  const body = Buffer.from(html, 'utf8')
  const headers: Array<readonly [string, string]> = [['Content-Type', HTML_CONTENT_TYPE], ['Content-Length', String(body.length)]]
  if (vary) headers.push(['Vary', vary])
  return { status, headers, body }
}

function apiAnswer(call: IncomingCall, route: Route, query: QueryDict, config: ApiConfig): Answer {
  let indent: number
  try {
    indent = negotiate(query, header(call, 'accept'), config.language).indent
  } catch (error) {
    // Negotiation fails before the session is read: only `Vary: Accept` (verified), default indent.
    if (error instanceof ApiError) return jsonAnswer(error.status, error.payload, DEFAULT_INDENT, 'Accept')
    throw error
  }
  const vary = 'Accept, Cookie'
  try {
    authenticate(header(call, 'authorization'))
    if (call.method === 'OPTIONS') return jsonAnswer(200, route.endpoint ? mediaOptions(route.endpoint) : OPTIONS_METADATA, indent, vary)
    if (call.method !== 'GET' && call.method !== 'HEAD') {
      return jsonAnswer(405, { detail: `Method "${call.method}" not allowed.` }, indent, vary)
    }
    if (route.kind === 'endpoint') return mediaAnswer(route, query, config, indent, vary)
    const index = config.store.current()
    const context: QueryContext = { index, models: config.store.models, version: config.version, urls: config.urls, i18n: config.i18n ?? false, locales: config.locales ?? ['en'], columnless: config.columnless ?? new Set() }
    if (route.kind === 'list') return jsonAnswer(200, listing(query, context, config.limitMax), indent, vary)
    if (route.kind === 'detail') return jsonAnswer(200, detail(route.idDigits as string, query, context), indent, vary)
    return findRedirect(query, context, vary)
  } catch (error) {
    if (error instanceof ApiError) return jsonAnswer(error.status, error.payload, indent, vary)
    if (error instanceof ServerError) return htmlAnswer(500, DJANGO_500_HTML, 'Cookie')
    throw error
  }
}

/** `listing_view`: queryset → unknown params → filters → pagination → serializer (docs/wagtail-compatibility.md#validation-order). */
function listing(query: QueryDict, context: QueryContext, limitMax: number | null): unknown {
  const compiled = compileQuery(query, context, 'listing')
  const pages = selectPages(compiled, context.index)
  const { offset, limit } = paginate(query, limitMax)
  const plan = fieldPlanFromQuery('listing', compiled.specific ? compiled.model.fields : [], query.get('fields'), context.i18n)
  const items = pages
    .slice(offset, offset + limit)
    .map((node) => serializePage(context.index, node, plan, { specific: compiled.specific }))
  return { meta: { total_count: pages.length }, items }
}

/**
 * `detail_view`: every filter backend runs, unknown params and limit/offset are ignored, then
 * `get_object_or_404` (docs/wagtail-compatibility.md#detail-view); `?fields=` is checked against the page's specific model afterwards.
 */
function detail(idDigits: string, query: QueryDict, context: QueryContext): unknown {
  const compiled = compileQuery(query, context, 'detail')
  // A search turns the queryset into search results, which `get_object_or_404` cannot query → bare 404.
  if (compiled.searching) throw notFound('')
  const id = toSafeNumber(BigInt(idDigits))
  const node = id === undefined ? undefined : context.index.byId.get(id)
  if (!node || !queryIncludes(compiled, node)) throw notFound(`No ${compiled.model.objectName} matches the given query.`)
  const plan = fieldPlanFromQuery('detail', pageExtraFields(node.page), query.get('fields'), context.i18n)
  return serializePage(context.index, node, plan, { specific: true })
}

/** Wagtail's `Page.route()`: by slug through every child (live or not); only the final page must be live. */
function routeHtmlPath(index: SiteIndex, htmlPath: string): PageNode | undefined {
  let node = index.root
  for (const component of htmlPath.split('/')) {
    if (component === '' || !node) continue
    node = node.children.find((child) => child.page.slug === component)
  }
  return node && node.live ? node : undefined
}

/** `find_view` (docs/wagtail-compatibility.md#find-view): `html_path` first, then `id`; found → 302 to the detail URL. */
function findRedirect(query: QueryDict, context: QueryContext, vary: string): Answer {
  const compiled = compileQuery(query, context, 'find')
  let found: PageNode | undefined
  if (query.has('html_path')) {
    const routed = routeHtmlPath(context.index, query.get('html_path') as string)
    // An unroutable path ends the search (no fallback to `id`); a routed page outside the queryset does not.
    if (!routed) throw notFound('not found')
    if (queryIncludes(compiled, routed)) found = routed
  }
  if (!found && query.has('id')) {
    const parsed = parsePyInt(query.get('id') as string)
    // `queryset.get(id='abc')` raises ValueError, which nobody catches (verified 500).
    if (parsed === undefined) throw new ServerError('invalid id')
    const id = toSafeNumber(parsed)
    const node = id === undefined ? undefined : context.index.byId.get(id)
    if (node && queryIncludes(compiled, node)) found = node
  }
  if (!found) throw notFound('not found')
  // 7.1+ keep every other parameter and always append `?`; older versions drop the query (docs/wagtail-compatibility.md#find-view).
  const location = context.version === '7.4' ? `${found.detailUrl}?${query.urlencodeWithout(['html_path', 'id'])}` : found.detailUrl
  return {
    status: 302,
    headers: [['Content-Type', HTML_CONTENT_TYPE], ['Location', location], ['Vary', vary], ['Allow', ALLOW], ['Content-Length', '0']],
    body: Buffer.alloc(0),
  }
}
