/**
 * URL routing as Django resolves it for a Wagtail site with the API router at `apiPath` (the
 * seed's `api/v1/cms/` unless told otherwise: Wagtail documents `api/v2/`) and `wagtail_urls` as
 * the catch-all (docs/wagtail-compatibility.md#routes-and-methods). The router registers `pages`
 * and, when the site has them, the `images` and `documents` endpoints.
 * @module
 */
import type { RequestKind } from './types.js'

export const DEFAULT_API_PATH = '/api/v1/cms/'

export interface Route {
  readonly kind: RequestKind
  /** Detail id digits (Django's `int` converter: `[0-9]+`, leading zeros allowed). */
  readonly idDigits?: string
  /** For `endpoint`: which of the router's other endpoints, and which of its views. */
  readonly endpoint?: string
  readonly view?: 'list' | 'detail' | 'find'
}

/** Where the router is and which other endpoints it has. */
export interface RouterLayout {
  readonly apiPath: string
  readonly endpoints: readonly string[]
}

export const DEFAULT_LAYOUT: RouterLayout = { apiPath: DEFAULT_API_PATH, endpoints: [] }

/** WSGI hands Django a percent-decoded PATH_INFO. */
export function decodePath(rawPath: string): string {
  try {
    return decodeURIComponent(rawPath)
  } catch {
    return rawPath
  }
}

/** An endpoint's own views below `<apiPath><name>/`. */
function viewOf(rest: string): { view: 'list' | 'detail' | 'find'; idDigits?: string } | undefined {
  if (rest === '') return { view: 'list' }
  if (rest === 'find/') return { view: 'find' }
  const detail = /^([0-9]+)\/$/.exec(rest)
  return detail ? { view: 'detail', idDigits: detail[1] as string } : undefined
}

/** Which API view a (decoded) path reaches, or `other`. */
export function routePath(path: string, layout: RouterLayout = DEFAULT_LAYOUT): Route {
  if (!path.startsWith(layout.apiPath)) return { kind: 'other' }
  const rest = path.slice(layout.apiPath.length)
  const slash = rest.indexOf('/')
  if (slash < 0) return { kind: 'other' }
  const name = rest.slice(0, slash)
  const view = viewOf(rest.slice(slash + 1))
  if (!view) return { kind: 'other' }
  if (name === 'pages') return view.idDigits === undefined ? { kind: view.view } : { kind: 'detail', idDigits: view.idDigits }
  if (!layout.endpoints.includes(name)) return { kind: 'other' }
  return { kind: 'endpoint', endpoint: name, view: view.view, ...(view.idDigits === undefined ? {} : { idDigits: view.idDigits }) }
}

/** Wagtail's catch-all `serve` pattern `^((?:[\w\-]+/)*)$` (Python's `\w` is Unicode-aware). */
const WAGTAIL_SERVE = /^\/(?:[\p{L}\p{N}\p{M}_-]+\/)*$/u

/**
 * `CommonMiddleware` APPEND_SLASH: a path that does not resolve but resolves with a `/` appended gets a
 * 301 to it (docs/wagtail-compatibility.md#routes-and-methods, verified for `/pages`, `/pages/4`, `/pages/find`).
 */
export function needsSlashRedirect(path: string, layout: RouterLayout = DEFAULT_LAYOUT): boolean {
  if (path.endsWith('/')) return false
  const withSlash = `${path}/`
  return routePath(withSlash, layout).kind !== 'other' || WAGTAIL_SERVE.test(withSlash)
}
