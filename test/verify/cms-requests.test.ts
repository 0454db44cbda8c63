import { describe, expect, it } from 'vitest'
import { askedTheCms, fieldsOrderCost, readThroughTotal } from '../../scripts/verify/cms-requests.js'
import type { Exchange, Result } from '../../scripts/verify/types.js'

const answer = (cacheStatus?: string): Exchange => ({ ok: true, answer: { status: 200, headers: cacheStatus === undefined ? {} : { 'cache-status': cacheStatus }, body: Buffer.from('{}') } })

describe('what the corpus cost the CMS', () => {
  it('sums the read-through samples of cms-shield\'s metrics, 0 before the first, nothing without the metric', () => {
    const metrics = [
      '# TYPE cms_shield_cms_requests_total counter',
      'cms_shield_cms_requests_total{class="sync",kind="list",status="200"} 5',
      'cms_shield_cms_requests_total{class="read_through",kind="list",status="200"} 3',
      'cms_shield_cms_requests_total{class="read_through",kind="detail",status="404"} 2',
      'cms_shield_cms_requests_total{class="refresh",kind="detail",status="200"} 7',
    ].join('\n')
    expect(readThroughTotal(metrics)).toBe(5)
    expect(readThroughTotal('# TYPE cms_shield_cms_requests_total counter\n')).toBe(0)
    expect(readThroughTotal('other_total 3\n')).toBeUndefined()
  })

  it('counts a request the shield sent on, not one answered from the snapshot or the cache, or one that joined a request in flight', () => {
    expect(askedTheCms(answer('cms-shield; fwd=miss; stored'))).toBe(true)
    expect(askedTheCms(answer('cms-shield; fwd=miss'))).toBe(true)
    expect(askedTheCms(answer('cms-shield; fwd=miss; collapsed'))).toBe(false)
    expect(askedTheCms(answer('cms-shield; hit; detail=snapshot'))).toBe(false)
    expect(askedTheCms(answer('cms-shield; hit'))).toBe(false)
    expect(askedTheCms(answer())).toBe(false)
    expect(askedTheCms({ ok: false, error: 'timeout' })).toBe(false)
  })

  it('adds them up by kind for the fields and order requests only', () => {
    const result = (kind: string, cacheStatus: string): Result => ({
      request: { n: 0, method: 'GET', view: 'listing', target: '/', kind },
      verdict: { outcome: 'identical', notes: [] },
      cms: answer(),
      shield: answer(cacheStatus),
    })
    const cost = fieldsOrderCost([
      result('order: first_published_at (ties)', 'cms-shield; fwd=miss; stored'), result('order: first_published_at (ties)', 'cms-shield; hit'),
      result('fields: * · detail', 'cms-shield; hit; detail=snapshot'), result('param search', 'cms-shield; fwd=miss'),
    ])
    expect([...cost]).toEqual([['fields: * · detail', { requests: 1, asked: 0 }], ['order: first_published_at (ties)', { requests: 2, asked: 1 }]])
  })
})
