/**
 * URL routing as Django resolves it for a Wagtail site with the API router at `api/v1/cms/` and
 * `wagtail_urls` as the catch-all (docs/wagtail-compatibility.md#routes-and-methods).
 * @module
 */
import type { RequestKind } from './types.js'

export const API_PREFIX = '/api/v1/cms/pages/'

export interface Route {
  readonly kind: RequestKind
  /** Detail id digits (Django's `int` converter: `[0-9]+`, leading zeros allowed). */
  readonly idDigits?: string
}

/** WSGI hands Django a percent-decoded PATH_INFO. */
export function decodePath(rawPath: string): string {
  try {
    return decodeURIComponent(rawPath)
  } catch {
    return rawPath
  }
}

const DETAIL = /^\/api\/v1\/cms\/pages\/([0-9]+)\/$/

/** Which API view a (decoded) path reaches, or `other`. */
export function routePath(path: string): Route {
  if (path === API_PREFIX) return { kind: 'list' }
  if (path === `${API_PREFIX}find/`) return { kind: 'find' }
  const detail = DETAIL.exec(path)
  if (detail) return { kind: 'detail', idDigits: detail[1] as string }
  return { kind: 'other' }
}

/** Wagtail's catch-all `serve` pattern `^((?:[\w\-]+/)*)$` (Python's `\w` is Unicode-aware). */
const WAGTAIL_SERVE = /^\/(?:[\p{L}\p{N}\p{M}_-]+\/)*$/u

/**
 * `CommonMiddleware` APPEND_SLASH: a path that does not resolve but resolves with a `/` appended gets a
 * 301 to it (docs/wagtail-compatibility.md#routes-and-methods, verified for `/pages`, `/pages/4`, `/pages/find`).
 */
export function needsSlashRedirect(path: string): boolean {
  if (path.endsWith('/')) return false
  const withSlash = `${path}/`
  return routePath(withSlash).kind !== 'other' || WAGTAIL_SERVE.test(withSlash)
}
