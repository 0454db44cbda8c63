/**
 * The caching headers cms-shield adds to what Wagtail sends (none of them change a body):
 * `ETag`, `Cache-Control` for browsers and CDNs, `Cache-Status` (RFC 9211) saying where the
 * answer came from, and `Age` on read-through answers.
 * @module
 */

export const CACHE_STATUS_NAME = 'cms-shield'

export interface ClientCachePolicy {
  readonly maxAgeMs: number
  readonly staleWhileRevalidateMs: number
  readonly staleIfErrorMs: number
  /**
   * With a CDN that cms-shield purges (docs/cdn-purging.md#caching-headers): how long shared caches
   * keep an answer (`s-maxage`, RFC 9111 §5.2.2.10), while browsers keep `max-age`.
   */
  readonly cdnMaxAgeMs?: number
  /** Fastly configured: the same lifetime in `Surrogate-Control`, which Fastly obeys and strips. */
  readonly surrogateControl?: boolean
  /**
   * How long anyone may keep a 404 for an absent id or path (CACHE_NEGATIVE_TTL); unset, 404s say
   * nothing and caches in front keep them as their own rules say.
   */
  readonly negativeMaxAgeMs?: number
}

const seconds = (ms: number) => Math.floor(ms / 1000)

/** `Cache-Control` for every 200 (and its 304), built once from the configuration. */
export function cacheControlValue(policy: ClientCachePolicy): string {
  return (
    `public, max-age=${seconds(policy.maxAgeMs)}` +
    (policy.cdnMaxAgeMs === undefined ? '' : `, s-maxage=${seconds(policy.cdnMaxAgeMs)}`) +
    `, stale-while-revalidate=${seconds(policy.staleWhileRevalidateMs)}` +
    `, stale-if-error=${seconds(policy.staleIfErrorMs)}`
  )
}

/** The caching headers of every 200 (and its 304): `Cache-Control`, and `Surrogate-Control` for Fastly. Built once. */
export function cachingHeaders(policy: ClientCachePolicy): Readonly<Record<string, string>> {
  const headers: Record<string, string> = { 'cache-control': cacheControlValue(policy) }
  if (policy.surrogateControl === true && policy.cdnMaxAgeMs !== undefined) {
    headers['surrogate-control'] = `max-age=${seconds(policy.cdnMaxAgeMs)}`
  }
  return Object.freeze(headers)
}

/**
 * The caching headers of a 404 for what does not exist: `Cache-Control` with the negative TTL (a
 * CDN keeps it too, and the creation's purge drops it); none when no negative TTL is set.
 */
export function negativeCachingHeaders(policy: ClientCachePolicy): Readonly<Record<string, string>> {
  if (policy.negativeMaxAgeMs === undefined) return Object.freeze({})
  return Object.freeze({ 'cache-control': `public, max-age=${seconds(policy.negativeMaxAgeMs)}` })
}

/** RFC 9211 values: what a cache in front of the CMS can say about one answer. */
export const cacheStatus = {
  /** Answered from the synced snapshot: the CMS was not involved. */
  index: `${CACHE_STATUS_NAME}; hit; detail=snapshot`,
  /** A fresh read-through entry. */
  hit: `${CACHE_STATUS_NAME}; hit`,
  /** Asked the CMS for this request (and kept the answer when `stored`). */
  miss: (stored: boolean) => `${CACHE_STATUS_NAME}; fwd=miss${stored ? '; stored' : ''}`,
  /** Joined a CMS request already in flight for the same key. */
  collapsed: `${CACHE_STATUS_NAME}; fwd=miss; collapsed`,
  /** Served past its freshness; `ttl` is negative by how many seconds (RFC 9211 §2.3). */
  stale: (secondsPast: number, why: 'revalidating' | 'cms-error' | 'over-budget') =>
    `${CACHE_STATUS_NAME}; hit; ttl=${-Math.max(0, Math.floor(secondsPast))}; detail=${why}`,
} as const
