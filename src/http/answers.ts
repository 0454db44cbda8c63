/**
 * The answers the proxy sends, as plain `{ status, headers, body }` values built once and reused.
 * Nothing here knows Fastify: routes (and any faster path) only copy these onto the socket.
 * @module
 */
import { renderWagtailJson } from '../json/json-text.js'
import { djangoNotFoundHtml, methodNotAllowed, optionsBody, type WagtailError } from '../query/wagtail-messages.js'
import type { CacheOutcome } from '../observability/shield-events.js'

export interface HttpAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
  /**
   * Where the answer came from, for metrics and the request log: set by whoever writes its
   * `Cache-Status` (RFC 9211), so the label never has to be parsed back out of the header.
   */
  readonly cache?: CacheOutcome
  /**
   * Set on a page's detail answered from the snapshot: the id of the one page whose record it
   * reads. A patch in place keeps every page where it was (`patchSnapshot`), so this answer holds
   * under a patched snapshot that did not replace that page.
   */
  readonly page?: number
}

/** Every answer of the API views carries these (docs/wagtail-compatibility.md#headers). */
export const API_HEADERS = Object.freeze({
  'content-type': 'application/json',
  vary: 'Accept',
  allow: 'GET, HEAD, OPTIONS',
})

const HTML_TYPE = 'text/html; charset=utf-8'

export function jsonAnswer(status: number, body: Buffer | unknown): HttpAnswer {
  return {
    status,
    headers: API_HEADERS,
    body: Buffer.isBuffer(body) ? body : Buffer.from(renderWagtailJson(body), 'utf8'),
  }
}

const wagtailErrorAnswers = new WeakMap<WagtailError, HttpAnswer>()

/** A Wagtail 400/404/406 answer; the constant ones are rendered once. */
export function errorAnswer(error: WagtailError): HttpAnswer {
  let answer = wagtailErrorAnswers.get(error)
  if (!answer) {
    answer = jsonAnswer(error.status, error.body)
    wagtailErrorAnswers.set(error, answer)
  }
  return answer
}

export const OPTIONS_ANSWER: HttpAnswer = jsonAnswer(200, optionsBody)

export function methodNotAllowedAnswer(method: string): HttpAnswer {
  return jsonAnswer(405, methodNotAllowed(method))
}

/** Django's bare 404 page: paths that are not API routes never reach the API (docs/wagtail-compatibility.md#routes-and-methods). */
export const NOT_FOUND_ANSWER: HttpAnswer = {
  status: 404,
  headers: Object.freeze({ 'content-type': HTML_TYPE }),
  body: Buffer.from(djangoNotFoundHtml, 'utf8'),
}

/** Django CommonMiddleware's APPEND_SLASH redirect: relative, query string kept (docs/wagtail-compatibility.md#routes-and-methods). */
export function appendSlashAnswer(path: string, rawQuery: string | undefined): HttpAnswer {
  return {
    status: 301,
    headers: { 'content-type': HTML_TYPE, location: `${path}/${rawQuery === undefined ? '' : `?${rawQuery}`}` },
    body: Buffer.alloc(0),
  }
}

/**
 * RFC 9110 §15.4.5: a 304 carries the validators and caching headers the 200 would have (ETag,
 * Cache-Control, Vary, and here Surrogate-Control, Cache-Status and Age), and no body. Nothing else: the RFC says a
 * 304 SHOULD NOT carry other metadata, and Django's own 304 (`_not_modified`) drops `Allow` too.
 */
export function notModifiedAnswer(full: HttpAnswer): HttpAnswer {
  const headers: Record<string, string> = {}
  for (const name of ['etag', 'cache-control', 'surrogate-control', 'vary', 'cache-status', 'age']) {
    const value = full.headers[name]
    if (value !== undefined) headers[name] = value
  }
  return { status: 304, headers, body: Buffer.alloc(0), ...(full.cache === undefined ? {} : { cache: full.cache }) }
}

/** find's 302: Django's `redirect()` with an empty HTML body and the API headers (docs/wagtail-compatibility.md#find-view). */
export function redirectAnswer(location: string): HttpAnswer {
  return {
    status: 302,
    headers: { ...API_HEADERS, 'content-type': HTML_TYPE, location },
    body: Buffer.alloc(0),
  }
}

/**
 * The proxy's own failures (no snapshot yet, CMS unreachable for a read-through): JSON in the
 * API's envelope so clients parse one shape, and a Retry-After where waiting helps.
 */
export function proxyFailureAnswer(status: number, message: string, retryAfterSeconds?: number): HttpAnswer {
  const answer = jsonAnswer(status, { message })
  if (retryAfterSeconds === undefined) return answer
  return { ...answer, headers: { ...answer.headers, 'retry-after': String(retryAfterSeconds) } }
}

/** Load shedding's quick refusal (`load-shedding.ts`): a CDN in front serves its stale copy meanwhile. */
export const OVERLOADED_ANSWER: HttpAnswer = proxyFailureAnswer(503, 'cms-shield is overloaded; retry shortly', 1)

/** What a view that throws or rejects becomes, on every path a request can take. */
export const INTERNAL_ERROR_ANSWER: HttpAnswer = proxyFailureAnswer(500, 'internal error')
