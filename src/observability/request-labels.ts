/**
 * Bounded labels for one HTTP request, for metrics and the request log line: which route it hit,
 * and where its answer came from. Both are derived from what the request and its response already
 * carry (the path, the `Cache-Status` header, RFC 9211), so no route has to report them.
 * @module
 */
import type { CacheOutcome, RouteName } from './shield-events.js'

const API = '/api/v1/cms/pages/'

export function routeOf(method: string, rawUrl: string): RouteName {
  if (method === 'PURGE') return 'purge'
  const q = rawUrl.indexOf('?')
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q)
  if (path === API) return 'list'
  if (path.startsWith(API)) {
    const rest = path.slice(API.length)
    if (rest === 'find/') return 'find'
    if (/^[0-9]+\/$/.test(rest)) return 'detail'
    return 'other'
  }
  switch (path) {
    case '/-/refresh': return 'refresh'
    case '/healthz': return 'healthz'
    case '/readyz': return 'readyz'
    case '/metrics': return 'metrics'
    default: return 'other'
  }
}

/** Reads back the `Cache-Status` value `http/cache-headers.ts` wrote. */
export function cacheOutcomeOf(cacheStatus: unknown): CacheOutcome {
  if (typeof cacheStatus !== 'string' || cacheStatus === '') return 'none'
  if (cacheStatus.includes('detail=snapshot')) return 'snapshot'
  if (cacheStatus.includes('detail=revalidating')) return 'stale'
  if (cacheStatus.includes('detail=cms-error')) return 'stale-error'
  if (cacheStatus.includes('detail=over-budget')) return 'stale-budget'
  if (cacheStatus.includes('collapsed')) return 'coalesced'
  if (cacheStatus.includes('fwd=miss')) return 'miss'
  if (cacheStatus.includes('; hit')) return 'hit'
  return 'none'
}
