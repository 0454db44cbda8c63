import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { cacheStatus } from '../http/cache-headers.js'
import { cacheOutcomeOf, routeOf } from './request-labels.js'

describe('routeOf', () => {
  it('names the API views, the operational routes, PURGE and everything else', () => {
    expect(routeOf('GET', '/api/v1/cms/pages/?child_of=2')).toBe('list')
    expect(routeOf('HEAD', '/api/v1/cms/pages/0042/')).toBe('detail')
    expect(routeOf('GET', '/api/v1/cms/pages/find/?html_path=/')).toBe('find')
    expect(routeOf('GET', '/api/v1/cms/pages/abc/')).toBe('other')
    expect(routeOf('PURGE', '/blog/')).toBe('purge')
    expect(routeOf('POST', '/-/refresh')).toBe('refresh')
    expect(routeOf('GET', '/readyz')).toBe('readyz')
    expect(routeOf('GET', '/metrics?x=1')).toBe('metrics')
    expect(routeOf('GET', '/wp-admin/')).toBe('other')
  })

  it('only ever answers one of a few names, whatever the URL (bounded label values)', () => {
    const names = new Set(['list', 'detail', 'find', 'purge', 'refresh', 'healthz', 'readyz', 'metrics', 'other'])
    fc.assert(fc.property(fc.string(), fc.string(), (method, url) => names.has(routeOf(method, url))))
  })
})

describe('cacheOutcomeOf', () => {
  it('reads back every Cache-Status value cms-shield writes', () => {
    expect(cacheOutcomeOf(cacheStatus.index)).toBe('snapshot')
    expect(cacheOutcomeOf(cacheStatus.hit)).toBe('hit')
    expect(cacheOutcomeOf(cacheStatus.miss(true))).toBe('miss')
    expect(cacheOutcomeOf(cacheStatus.miss(false))).toBe('miss')
    expect(cacheOutcomeOf(cacheStatus.collapsed)).toBe('coalesced')
    expect(cacheOutcomeOf(cacheStatus.stale(3, 'revalidating'))).toBe('stale')
    expect(cacheOutcomeOf(cacheStatus.stale(3, 'cms-error'))).toBe('stale-error')
    expect(cacheOutcomeOf(undefined)).toBe('none')
    expect(cacheOutcomeOf(['x'])).toBe('none')
  })
})
