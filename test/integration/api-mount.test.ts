/**
 * A Wagtail laid out as its documentation does: the API router at `/api/v2/` with the `pages`,
 * `images` and `documents` endpoints (API_PATH, API_ENDPOINTS). The pages endpoint is answered from
 * the snapshot at the new path; the other endpoints read-through, with what read-through has: both
 * tiers, coalescing, the budget, stale answers while the CMS fails, `Cache-Status`, purge keys, and
 * PURGE of their URLs.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { SAMPLE_MEDIA as MEDIA } from '../fake-wagtail/sample-layouts.js'
import { BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})


const V2 = { API_PATH: '/api/v2/', API_ENDPOINTS: 'images,documents' }

function startV2(env: Record<string, string> = {}, deps: Parameters<typeof startShield>[0] = {}): Promise<Harness> {
  return startShield({ origin: { apiPath: '/api/v2/', media: MEDIA }, ...deps, env: { ...V2, ...env } })
}

describe('the API router at another path (API_PATH)', () => {
  it('syncs from the CMS at that path and answers the pages endpoint there from the snapshot, at no CMS cost', async () => {
    h = await startV2()
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    for (const url of ['/api/v2/pages/', '/api/v2/pages/?child_of=2&limit=3', '/api/v2/pages/2/', '/api/v2/pages/find/?html_path=/', '/api/v2/pages/find/?id=2']) {
      const compared = await expectSameAsCms(h, url)
      expect(compared.status, url).toBeLessThan(400)
      expect(compared.cmsHits, url).toBe(0)
    }
    const detail = await h.get('/api/v2/pages/2/')
    expect(JSON.parse(detail.body).meta.detail_url).toBe(`${BASE_URL}/api/v2/pages/2/`)
    expect((await h.get('/api/v2/pages/find/?id=2')).headers['location']).toBe(`${BASE_URL}/api/v2/pages/2/?`)
  })

  it('serves nothing at the default path, and answers Django\'s slash redirects at the new one', async () => {
    h = await startV2()
    for (const url of ['/api/v1/cms/pages/', '/api/v2/pages', '/api/v2/images']) expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    expect((await h.get('/api/v1/cms/pages/')).status).toBe(404)
  })
})

describe('the router\'s other endpoints (API_ENDPOINTS)', () => {
  it('answer exactly as the CMS does, detail_url on BASE_URL and download_url as the CMS wrote it, once per query', async () => {
    h = await startV2()
    const urls = [
      '/api/v2/images/', '/api/v2/images/?tags=sea&order=-title', '/api/v2/images/5/', '/api/v2/images/005/?fields=*',
      '/api/v2/images/99/', '/api/v2/images/?nope=1', '/api/v2/images/find/?id=5', '/api/v2/images/find/?id=99',
      '/api/v2/documents/', '/api/v2/documents/3/', '/api/v2/documents/?search=report',
    ]
    for (const url of urls) {
      const first = await expectSameAsCms(h, url)
      expect(first.cmsHits, url).toBe(1)
      const again = await expectSameAsCms(h, url)
      expect(again.cmsHits, `${url} (cached)`).toBe(0)
    }
    const image = JSON.parse((await h.get('/api/v2/images/5/')).body)
    expect(image.meta).toEqual({ type: 'wagtailimages.Image', detail_url: `${BASE_URL}/api/v2/images/5/`, tags: ['sea', 'night'], download_url: '/media/original_images/lighthouse.png' })
    const document = JSON.parse((await h.get('/api/v2/documents/1/')).body)
    expect(document.meta.download_url).toBe(`http://localhost/documents/1/report.pdf`)
  })

  it('carries the read-through headers: Cache-Status, Age, ETag, Cache-Control and the endpoint\'s purge key', async () => {
    h = await startV2()
    const miss = await h.get('/api/v2/images/')
    expect(miss.headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    const hit = await h.get('/api/v2/images/')
    expect(hit.headers['cache-status']).toBe('cms-shield; hit')
    expect(hit.headers['etag']).toBe(miss.headers['etag'])
    expect(hit.headers['cache-control']).toMatch(/^public, max-age=\d+/)
    expect(hit.headers['surrogate-key']).toBe('cms-pages cms-endpoint-images')
    expect(hit.headers['age']).toBe('0')
    const notModified = await h.app.inject({ method: 'GET', url: '/api/v2/images/', headers: { 'if-none-match': String(hit.headers['etag']) } })
    expect(notModified.statusCode).toBe(304)
  })

  it('answers OPTIONS, a method DRF refuses, and a format it cannot render, without the CMS', async () => {
    h = await startV2()
    for (const [url, method] of [['/api/v2/images/', 'OPTIONS'], ['/api/v2/documents/3/', 'OPTIONS'], ['/api/v2/images/', 'POST'], ['/api/v2/images/?format=xml', 'GET']] as const) {
      expect((await expectSameAsCms(h, url, { method })).cmsHits, `${method} ${url}`).toBe(0)
    }
  })

  it('are a bare 404 when not configured, and never reach the CMS', async () => {
    h = await startShield({ origin: { apiPath: '/api/v2/', media: MEDIA }, env: { API_PATH: '/api/v2/' } })
    h.origin.resetHits()
    const answer = await h.get('/api/v2/images/')
    expect(answer.status).toBe(404)
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(h.origin.hits.total).toBe(0)
  })

  it('coalesce concurrent misses into one CMS request', async () => {
    h = await startV2()
    h.origin.resetHits()
    h.origin.setLatency(50)
    const answers = await Promise.all(Array.from({ length: 10 }, () => h!.get('/api/v2/images/?order=title')))
    expect(new Set(answers.map((answer) => answer.body)).size).toBe(1)
    expect(h.origin.hits.endpoint).toBe(1)
  })

  it('spend the client\'s share of the CMS budget on misses, and answer 429 past it', async () => {
    h = await startV2({ READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '2', READ_THROUGH_QUEUE_TIMEOUT: '0s', READ_THROUGH_ADAPTIVE: 'false' })
    h.origin.resetHits()
    const answers = []
    for (const id of [1, 2, 5, 6]) answers.push(await h.get(`/api/v2/images/${id}/`))
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429, 429])
    expect(JSON.parse(answers[2]!.body)).toEqual({ message: 'too many requests that only the CMS can answer; slow down' })
    expect(answers[2]!.headers['retry-after']).toBe('1')
    expect(h.origin.hits.endpoint).toBe(2) // the refused misses never reached the CMS
    const stored = await h.get('/api/v2/images/1/') // stored: no share spent
    expect({ status: stored.status, body: stored.body }).toEqual({ status: 200, body: answers[0]!.body })
    expect(h.origin.hits.endpoint).toBe(2)
  })

  it('serve a stored answer while the CMS fails, within CACHE_STALE_IF_ERROR', async () => {
    let clock = 1_700_000_000_000
    h = await startV2({ CACHE_TTL: '30s', CACHE_STALE_WHILE_REVALIDATE: '0s' }, { deps: { now: () => clock, random: () => 0 } })
    const good = await h.get('/api/v2/documents/')
    clock += 100_000
    h.origin.setFault(() => ({ type: 'status', status: 503 }))
    const stale = await h.get('/api/v2/documents/')
    expect(stale.status).toBe(200)
    expect(stale.body).toBe(good.body)
    expect(stale.headers['cache-status']).toBe('cms-shield; hit; ttl=-70; detail=cms-error')
  })

  it('answer a 4xx where the CMS fails with a 500 on a query it otherwise answers, never a 5xx', async () => {
    h = await startV2()
    h.origin.setFault((request) => (request.path.includes('/images/find/') || request.query.has('nope') ? { type: 'status', status: 500, body: 'Server Error (500)', contentType: 'text/html' } : undefined))
    const find = await h.get('/api/v2/images/find/?id=abc')
    expect({ status: find.status, body: JSON.parse(find.body) }).toEqual({ status: 404, body: { message: 'not found' } })
    const listing = await h.get('/api/v2/documents/?nope=1')
    expect(listing.status).toBe(400)
    expect(JSON.parse(listing.body)).toEqual({ message: 'the CMS could not answer this query: one of its parameters has a value it cannot use' })
    // Without a parameter to blame, the CMS is failing: a 502.
    h.origin.setFault(() => ({ type: 'status', status: 500 }))
    expect((await h.get('/api/v2/images/?limit=3')).status).toBe(502)
  })

  it('are fetched anew after a PURGE of one of the endpoint\'s URLs, and only that endpoint\'s', async () => {
    h = await startV2()
    await h.get('/api/v2/images/5/')
    await h.get('/api/v2/documents/3/')
    h.origin.resetHits()
    const purge = await h.app.inject({ method: 'PURGE', url: '/api/v2/images/5/', remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBe(200)
    expect(JSON.parse(purge.body)).toEqual({ status: 'ok', target: 'endpoint' })
    expect((await h.get('/api/v2/images/5/')).headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect((await h.get('/api/v2/documents/3/')).headers['cache-status']).toBe('cms-shield; hit')
    expect(h.origin.hits.endpoint).toBe(1)
    expect(h.origin.hits.list).toBe(0) // an endpoint's PURGE is no listing pass of the pages
  })
})
