/**
 * The API router's URL space (`ApiMount`), routed in one place: which endpoint and view a path
 * names, which spellings redirect to their slashed form, and what under an endpoint names nothing. Django routes on
 * the percent-decoded path (docs/wagtail-compatibility.md#routes-and-methods), so this does too; a path
 * that does not decode names no route. Pure: the serving core (`serve.ts`), the load shedder and
 * the request labels all ask it.
 * @module
 */

import { DEFAULT_MOUNT, type ApiMount } from '../config/api-mount.js'

/** A view of an endpoint; `endpoint` is set for the router's other endpoints, unset for pages. */
export type ViewTarget =
  | { readonly kind: 'list'; readonly endpoint?: string }
  | { readonly kind: 'find'; readonly endpoint?: string }
  /** `<id>/`: Django's `[0-9]+`, leading zeros kept (the view reads them). */
  | { readonly kind: 'detail'; readonly id: string; readonly endpoint?: string }

export type ApiTarget =
  | ViewTarget
  /** Django's APPEND_SLASH: a route's spelling without its final slash. */
  | { readonly kind: 'append-slash' }
  /** Under the API's prefix, but no route: Django's 404 page. */
  | { readonly kind: 'not-found' }

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

/** What a raw path (no query) names in the API; `undefined` when it is not the API's at all (the caller's other routes, or a bare 404). */
export type RouteApiPath = (rawPath: string) => ApiTarget | undefined

/** Each endpoint's views, built once: a listing or find hit allocates no target. */
interface EndpointTargets {
  readonly list: ApiTarget
  readonly find: ApiTarget
  readonly endpoint: string | undefined
}

function targetsOf(endpoint: string | undefined): EndpointTargets {
  const named = endpoint === undefined ? {} : { endpoint }
  return { list: Object.freeze({ kind: 'list', ...named }), find: Object.freeze({ kind: 'find', ...named }), endpoint }
}

export function createApiRouter(mount: ApiMount = DEFAULT_MOUNT): RouteApiPath {
  const { root } = mount
  const endpoints = new Map<string, EndpointTargets>([[mount.pages, targetsOf(undefined)]])
  for (const name of mount.endpoints) endpoints.set(name, targetsOf(name))
  // Without its final slash the router's path names no route, but is Django's to 404.
  const slashless = root.slice(0, -1)

  return (rawPath) => {
    const path = decoded(rawPath)
    if (path === undefined) return rawPath.startsWith(slashless) ? NOT_FOUND : undefined
    if (!path.startsWith(root)) return undefined
    const rest = path.slice(root.length)
    const slash = rest.indexOf('/')
    const targets = endpoints.get(slash < 0 ? rest : rest.slice(0, slash))
    if (targets === undefined) return undefined
    if (slash < 0) return APPEND_SLASH
    const view = rest.slice(slash + 1)
    if (view === '') return targets.list
    if (view === 'find/') return targets.find
    if (view === 'find') return APPEND_SLASH
    const slashed = view.charCodeAt(view.length - 1) === 47
    const digits = slashed ? view.length - 1 : view.length
    if (!allDigits(view, digits)) return NOT_FOUND
    if (!slashed) return APPEND_SLASH
    const id = view.slice(0, -1)
    return targets.endpoint === undefined ? { kind: 'detail', id } : { kind: 'detail', id, endpoint: targets.endpoint }
  }
}

/**
 * The route label of a target (metrics and the request log): the pages endpoint's three views by
 * name, the rest (other endpoints included) `other`.
 */
export function apiRouteName(target: ApiTarget): 'list' | 'detail' | 'find' | 'other' {
  if (target.kind !== 'list' && target.kind !== 'find' && target.kind !== 'detail') return 'other'
  return target.endpoint === undefined ? target.kind : 'other'
}
