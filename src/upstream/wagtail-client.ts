/**
 * Typed calls to the CMS's pages API over the HTTP client. Bodies come back as checked but
 * unparsed JSON text: the sync parses them losslessly (spec §6.1) and the guards in
 * `wagtail-types.ts` have already vouched for their shape.
 * @module
 */

import { createError } from '../errors.js'
import type { GetOptions, HttpClient, JsonResponse, UpstreamResponse } from './http-client.js'
import { isDetail, isListEnvelope } from './wagtail-types.js'

/** Where Wagtail's router is mounted, below the CMS base URL (and its path prefix, if any). */
export const PAGES_API_PATH = '/api/v1/cms/pages/'

export interface ListParams {
  readonly offset: number
  /** `null` leaves `limit` out: the CMS's default page size (20, or WAGTAILAPI_LIMIT_MAX if lower). */
  readonly limit: number | null
  /** More query text, already encoded (`fields=show_in_menus,seo_title`); appended as is. */
  readonly extra?: string
}

export interface CallOptions {
  readonly signal?: AbortSignal
}

export interface WagtailClient {
  /** Absolute URL of the CMS's pages API (`<UPSTREAM_URL>/api/v1/cms/pages/`): the prefix its `detail_url`s are checked against. */
  readonly apiUrl: string
  /** One page of the listing in tree order; anything but 200 is UPSTREAM_BAD_STATUS. */
  listPages(params: ListParams, options?: CallOptions): Promise<JsonResponse>
  /** One detail: 200 (shape-checked) or 404 (gone since the listing); anything else throws. */
  getPage(id: number, options?: CallOptions): Promise<JsonResponse>
  /** `find/?…`: 302 with `Location`, or Wagtail's 4xx; 5xx and other statuses throw. Redirects are not followed. */
  find(query: string | URLSearchParams, options?: CallOptions): Promise<UpstreamResponse>
  /** Read-through: `pathAndQuery` relative to the pages API (`''`, `?…`, `<id>/?…`, `find/?…`); any status. */
  raw(pathAndQuery: string, options?: GetOptions): Promise<UpstreamResponse>
}

/** Path below the CMS base URL of the listing page `params` asks for. */
export function listPath({ offset, limit, extra }: ListParams): string {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new TypeError(`offset must be a whole number, got ${offset}`)
  if (limit !== null && (!Number.isSafeInteger(limit) || limit < 1)) throw new TypeError(`limit must be a positive whole number, got ${limit}`)
  let query = `?offset=${offset}`
  if (limit !== null) query += `&limit=${limit}`
  const more = extra?.replace(/^[?&]+/, '')
  if (more !== undefined && more !== '') query += `&${more}`
  return `${PAGES_API_PATH}${query}`
}

/** Path below the CMS base URL of page `id`'s detail. */
export function detailPath(id: number): string {
  if (!Number.isSafeInteger(id) || id < 0) throw new TypeError(`page id must be a whole number, got ${id}`)
  return `${PAGES_API_PATH}${id}/`
}

/** Path below the CMS base URL of `find/` with `query` (`html_path=…`, `id=…`). */
export function findPath(query: string | URLSearchParams): string {
  const text = typeof query === 'string' ? query.replace(/^\?/, '') : query.toString()
  return `${PAGES_API_PATH}find/${text === '' ? '' : `?${text}`}`
}

/**
 * What read-through may ask for: the three routes Wagtail has (spec §4) and a query of visible
 * ASCII without `#`. Anything else (`../`, another API, raw spaces) is refused here, so a path
 * built from a client's request can never reach other parts of the CMS.
 */
const RAW_PATH = /^(?:(?:\d+|find)\/)?(?:\?[\x21\x22\x24-\x7e]*)?$/

/** Path below the CMS base URL for a read-through `pathAndQuery` relative to the pages API. */
export function rawPath(pathAndQuery: string): string {
  if (!RAW_PATH.test(pathAndQuery)) throw new TypeError(`not a pages API path: ${JSON.stringify(pathAndQuery)}`)
  return `${PAGES_API_PATH}${pathAndQuery}`
}

const isFindAnswer = (status: number): boolean => status === 302 || (status >= 400 && status < 500)

export function createWagtailClient({ http }: { http: HttpClient }): WagtailClient {
  const unexpected = (path: string, status: number): Error =>
    createError('UPSTREAM_BAD_STATUS', `GET ${path}: unexpected status ${status}`, { details: { path, status } })

  return {
    apiUrl: `${http.baseUrl}${PAGES_API_PATH}`,

    async listPages(params, options = {}) {
      const path = listPath(params)
      const response = await http.getJson(path, { signal: options.signal, expect: isListEnvelope })
      // A non-200 listing is never usable data, whatever its body says.
      if (response.status !== 200) throw unexpected(path, response.status)
      return response
    },

    async getPage(id, options = {}) {
      const path = detailPath(id)
      const response = await http.getJson(path, { signal: options.signal, expect: isDetail })
      if (response.status !== 200 && response.status !== 404) throw unexpected(path, response.status)
      return response
    },

    async find(query, options = {}) {
      const path = findPath(query)
      const response = await http.get(path, { signal: options.signal })
      if (!isFindAnswer(response.status)) throw unexpected(path, response.status)
      return response
    },

    raw(pathAndQuery, options) {
      return http.get(rawPath(pathAndQuery), options)
    },
  }
}
