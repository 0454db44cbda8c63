/**
 * The pages API's URL space, routed in one place: which view a path names, which spellings
 * redirect to their slashed form, and what under the API's prefix names nothing. Django routes on
 * the percent-decoded path (docs/wagtail-compatibility.md#routes-and-methods), so this does too; a path
 * that does not decode names no route. Pure: the serving core (`serve.ts`), the load shedder and
 * the request labels all ask it.
 * @module
 */

/** Where cms-shield serves the pages API: the CMS's own path. */
export const PAGES_PATH = '/api/v1/cms/pages/'

const SLASHLESS = PAGES_PATH.slice(0, -1)

export type ApiTarget =
  | { readonly kind: 'list' }
  | { readonly kind: 'find' }
  /** `<id>/`: Django's `[0-9]+`, leading zeros kept (the view reads them). */
  | { readonly kind: 'detail'; readonly id: string }
  /** Django's APPEND_SLASH: a route's spelling without its final slash. */
  | { readonly kind: 'append-slash' }
  /** Under the API's prefix, but no route: Django's 404 page. */
  | { readonly kind: 'not-found' }

const LIST: ApiTarget = Object.freeze({ kind: 'list' })
const FIND: ApiTarget = Object.freeze({ kind: 'find' })
const APPEND_SLASH: ApiTarget = Object.freeze({ kind: 'append-slash' })
const NOT_FOUND: ApiTarget = Object.freeze({ kind: 'not-found' })

/** The path of a raw request target (`/a/b?x=1` → `/a/b`). */
export function pathOf(rawUrl: string): string {
  const q = rawUrl.indexOf('?')
  return q < 0 ? rawUrl : rawUrl.slice(0, q)
}

/** Django decodes the path before routing; a malformed escape matches nothing. */
function decoded(rawPath: string): string | undefined {
  if (!rawPath.includes('%')) return rawPath
  try {
    return decodeURIComponent(rawPath)
  } catch {
    return undefined
  }
}

/** True for `[0-9]+` (checked by char code: this runs on every detail read). */
function allDigits(text: string, end: number): boolean {
  if (end === 0) return false
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i)
    if (code < 48 || code > 57) return false
  }
  return true
}

/**
 * What a raw path (no query) names in the pages API; `undefined` when it is not the API's at all
 * (the caller's other routes, or a bare 404).
 */
export function routeApiPath(rawPath: string): ApiTarget | undefined {
  const path = decoded(rawPath)
  if (path === undefined) return rawPath.startsWith(SLASHLESS) ? NOT_FOUND : undefined
  if (!path.startsWith(SLASHLESS)) return undefined
  if (path.length === SLASHLESS.length) return APPEND_SLASH
  if (path.charCodeAt(SLASHLESS.length) !== 47) return undefined
  if (path.length === PAGES_PATH.length) return LIST
  const rest = path.slice(PAGES_PATH.length)
  if (rest === 'find/') return FIND
  if (rest === 'find') return APPEND_SLASH
  const slashed = rest.charCodeAt(rest.length - 1) === 47
  const digits = slashed ? rest.length - 1 : rest.length
  if (!allDigits(rest, digits)) return NOT_FOUND
  return slashed ? { kind: 'detail', id: rest.slice(0, -1) } : APPEND_SLASH
}

/** The route label of a target (metrics and the request log): the three views by name, the rest `other`. */
export function apiRouteName(target: ApiTarget): 'list' | 'detail' | 'find' | 'other' {
  return target.kind === 'list' || target.kind === 'find' || target.kind === 'detail' ? target.kind : 'other'
}
