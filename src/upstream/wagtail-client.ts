/**
 * Read-through's way to the CMS's API router: only the routes Wagtail has, any status returned for
 * the caller to judge. (The sync reads through the smaller `UpstreamGet` port and validates
 * shapes itself, in `src/sync/read-page-fields.ts`.)
 * @module
 */

import { DEFAULT_MOUNT, type ApiMount } from '../config/api-mount.js'
import type { GetOptions, HttpClient, UpstreamResponse } from './http-client.js'

/**
 * What read-through may ask for, below the router's path: an endpoint's three routes
 * (docs/wagtail-compatibility.md#routes-and-methods) and a query of visible ASCII without `#`.
 * Anything else (`../`, an endpoint not configured, raw spaces) is refused here, so a path built
 * from a client's request can never reach other parts of the CMS.
 */
const routes = new WeakMap<ApiMount, RegExp>()

function routesOf(mount: ApiMount): RegExp {
  const known = routes.get(mount)
  if (known) return known
  const names = [mount.pages, ...mount.endpoints].map((name) => name.replace(/[-]/g, '\\-')).join('|')
  const pattern = new RegExp(`^(?:${names})/(?:(?:\\d+|find)/)?(?:\\?[\\x21\\x22\\x24-\\x7e]*)?$`)
  routes.set(mount, pattern)
  return pattern
}

/** Path below the CMS base URL for a read-through `pathAndQuery` relative to the router (`pages/?…`). */
export function rawPath(pathAndQuery: string, mount: ApiMount = DEFAULT_MOUNT): string {
  if (!routesOf(mount).test(pathAndQuery)) throw new TypeError(`not an API route: ${JSON.stringify(pathAndQuery)}`)
  return `${mount.root}${pathAndQuery}`
}

export interface WagtailClient {
  /** Absolute URL of the CMS's pages endpoint (`<UPSTREAM_URL><API_PATH>pages/`). */
  readonly apiUrl: string
  /** The router's path below the CMS base URL (`/api/v2/`). */
  readonly apiPath: string
  /** Read-through: `pathAndQuery` relative to the router (`pages/`, `pages/?…`, `images/<id>/?…`, `documents/find/?…`); any status. */
  raw(pathAndQuery: string, options?: GetOptions): Promise<UpstreamResponse>
}

export function createWagtailClient({ http, mount = DEFAULT_MOUNT }: { http: HttpClient; mount?: ApiMount }): WagtailClient {
  return {
    apiUrl: `${http.baseUrl}${mount.pagesPath}`,
    apiPath: mount.root,
    raw: (pathAndQuery, options) => http.get(rawPath(pathAndQuery, mount), options),
  }
}
