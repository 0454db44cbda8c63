import { describe, expect, it } from 'vitest'
import { cachingHeaders } from './cache-headers.js'

const CLIENT = { maxAgeMs: 30_000, staleWhileRevalidateMs: 60_000, staleIfErrorMs: 86_400_000 }

describe('the caching headers of a 200', () => {
  it('are Cache-Control alone without a CDN that cms-shield purges', () => {
    expect(cachingHeaders(CLIENT)).toEqual({ 'cache-control': 'public, max-age=30, stale-while-revalidate=60, stale-if-error=86400' })
  })

  it('give shared caches s-maxage (whole seconds) with a purge target, browsers keeping max-age', () => {
    expect(cachingHeaders({ ...CLIENT, cdnMaxAgeMs: 3_600_500 })).toEqual({
      'cache-control': 'public, max-age=30, s-maxage=3600, stale-while-revalidate=60, stale-if-error=86400',
    })
  })

  it('add Surrogate-Control with the same lifetime for Fastly', () => {
    expect(cachingHeaders({ ...CLIENT, cdnMaxAgeMs: 7_200_000, surrogateControl: true })).toEqual({
      'cache-control': 'public, max-age=30, s-maxage=7200, stale-while-revalidate=60, stale-if-error=86400',
      'surrogate-control': 'max-age=7200',
    })
  })
})
