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

/**
 * A read-through path may name the Site to ask as, network-path style: `//partner.example/pages/?…`
 * asks `pages/?…` with `Host: partner.example` (docs/wagtail-compatibility.md#sites). Only
 * hostnames from the configuration (SITES) are ever put there.
 */
const AS_SITE = /^\/\/([A-Za-z0-9.-]+)(\/.*)$/

/** The Site a read-through path asks as (`undefined`: the CMS's default) and the path below the router. */
export function splitSite(pathAndQuery: string): { site: string | undefined; path: string } {
  const asSite = AS_SITE.exec(pathAndQuery)
  return asSite ? { site: asSite[1]!, path: asSite[2]!.slice(1) } : { site: undefined, path: pathAndQuery }
}

export interface WagtailClient {
  /** Absolute URL of the CMS's pages endpoint (`<UPSTREAM_URL><API_PATH>pages/`). */
  readonly apiUrl: string
  /** The router's path below the CMS base URL (`/api/v2/`). */
  readonly apiPath: string
  /**
   * Read-through: `pathAndQuery` relative to the router (`pages/`, `pages/?…`, `images/<id>/?…`,
   * `documents/find/?…`), or as a Site (`//partner.example/pages/?…`); any status.
   */
  raw(pathAndQuery: string, options?: GetOptions): Promise<UpstreamResponse>
}

export function createWagtailClient({ http, mount = DEFAULT_MOUNT }: { http: HttpClient; mount?: ApiMount }): WagtailClient {
  return {
    apiUrl: `${http.baseUrl}${mount.pagesPath}`,
    apiPath: mount.root,
    raw(pathAndQuery, options) {
      const { site, path } = splitSite(pathAndQuery)
      return http.get(rawPath(path, mount), site === undefined ? options : { ...options, host: site })
    },
  }
}
