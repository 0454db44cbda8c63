import { describe, expect, it } from 'vitest'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import type { UpstreamResponse } from '../upstream/http-client.js'
import { toStoredAnswer } from './read-through-loader.js'

const rewrite = createUrlRewriter({ baseUrl: 'https://shield.example' })
const response = (status: number, headers: Record<string, string>, body = '', contentType = 'application/json'): UpstreamResponse => ({
  status,
  headers,
  contentType,
  body: Buffer.from(body),
  text: () => body,
})

describe('toStoredAnswer', () => {
  it('rewrites detail_urls in JSON bodies and keeps every other byte', () => {
    const body = '{\n    "id": 4,\n    "meta": {\n        "detail_url": "http://cms:8000/api/v1/cms/pages/4/",\n        "html_url": "http://cms:8000/x/"\n    }\n}'
    const stored = toStoredAnswer(response(200, {}, body), rewrite, 7, 'GET x')
    expect(stored.body.toString()).toBe(body.replace('http://cms:8000/api/v1/cms/pages/4/', 'https://shield.example/api/v1/cms/pages/4/'))
    expect(stored).toMatchObject({ status: 200, cacheable: true, storedAt: 7 })
  })

  it('never lets an answer that set a cookie be replayed to others', () => {
    expect(toStoredAnswer(response(200, { 'set-cookie': 'sessionid=""' }, '{}'), rewrite, 0, 'x').cacheable).toBe(false)
  })

  it('rewrites find\'s Location to BASE_URL', () => {
    const stored = toStoredAnswer(response(302, { location: 'http://localhost/api/v1/cms/pages/4/?fields=_%2Cid' }, '', 'text/html'), rewrite, 0, 'x')
    expect(stored.location).toBe('https://shield.example/api/v1/cms/pages/4/?fields=_%2Cid')
  })

  it('refuses a 302 that does not point into the pages API (a login page in front of the CMS)', () => {
    for (const location of ['http://cms:8000/admin/login/?next=/api/v1/cms/pages/', 'https://sso.example/login', '/accounts/login/']) {
      expect(() => toStoredAnswer(response(302, { location }, '', 'text/html'), rewrite, 0, 'x'), location).toThrow(/302 to a URL outside the pages API/)
    }
    expect(() => toStoredAnswer(response(302, {}, '', 'text/html'), rewrite, 0, 'x')).toThrow(/302 without Location/)
  })

  it('refuses what is not a deterministic CMS answer: 5xx, HTML, malformed JSON', () => {
    expect(() => toStoredAnswer(response(500, {}, '<html>', 'text/html'), rewrite, 0, 'x')).toThrow(/answered 500/)
    expect(() => toStoredAnswer(response(200, {}, '<html>', 'text/html'), rewrite, 0, 'x')).toThrow(/content type/)
    expect(() => toStoredAnswer(response(200, {}, '{"a": '), rewrite, 0, 'x')).toThrow(/malformed JSON/)
  })
})
