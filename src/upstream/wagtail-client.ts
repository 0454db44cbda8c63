/**
 * Read-through's way to the CMS's pages API: only the routes Wagtail has, any status returned for
 * the caller to judge. (The sync reads through the smaller `UpstreamGet` port and validates
 * shapes itself, in `src/sync/read-page-fields.ts`.)
 * @module
 */

import type { GetOptions, HttpClient, UpstreamResponse } from './http-client.js'

/** Where Wagtail's router is mounted, below the CMS base URL (and its path prefix, if any). */
export const PAGES_API_PATH = '/api/v1/cms/pages/'

/**
 * What read-through may ask for: the three routes Wagtail has (docs/wagtail-compatibility.md#routes-and-methods) and a query of visible
 * ASCII without `#`. Anything else (`../`, another API, raw spaces) is refused here, so a path
 * built from a client's request can never reach other parts of the CMS.
 */
const RAW_PATH = /^(?:(?:\d+|find)\/)?(?:\?[\x21\x22\x24-\x7e]*)?$/

/** Path below the CMS base URL for a read-through `pathAndQuery` relative to the pages API. */
export function rawPath(pathAndQuery: string): string {
  if (!RAW_PATH.test(pathAndQuery)) throw new TypeError(`not a pages API path: ${JSON.stringify(pathAndQuery)}`)
  return `${PAGES_API_PATH}${pathAndQuery}`
}

export interface WagtailClient {
  /** Absolute URL of the CMS's pages API (`<UPSTREAM_URL>/api/v1/cms/pages/`). */
  readonly apiUrl: string
  /** Read-through: `pathAndQuery` relative to the pages API (`''`, `?…`, `<id>/?…`, `find/?…`); any status. */
  raw(pathAndQuery: string, options?: GetOptions): Promise<UpstreamResponse>
}

export function createWagtailClient({ http }: { http: HttpClient }): WagtailClient {
  return {
    apiUrl: `${http.baseUrl}${PAGES_API_PATH}`,
    raw: (pathAndQuery, options) => http.get(rawPath(pathAndQuery), options),
  }
}
