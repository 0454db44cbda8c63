/**
 * Queries the index cannot answer go to the CMS once per key, are kept for CACHE_TTL, come back
 * with detail_urls on BASE_URL, and never carry a client's credentials to the CMS.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const readThroughQueries = [
  '/api/v1/cms/pages/?search=versicherung',
  '/api/v1/cms/pages/?search=',
  '/api/v1/cms/pages/?order=-title&limit=5',
  '/api/v1/cms/pages/?order=foo',
  '/api/v1/cms/pages/?fields=title(x),slug(y)',
  '/api/v1/cms/pages/?fields=alias_of(nope)&limit=2',
  '/api/v1/cms/pages/2/?fields=_,id,locale(x)',
  '/api/v1/cms/pages/?locale=en&limit=3',
  '/api/v1/cms/pages/?locale=xx',
  '/api/v1/cms/pages/2/?search=x',
]

describe('read-through', () => {
  it('answers what only the CMS can answer exactly as the CMS does, detail_urls rewritten, one CMS request each', async () => {
    h = await startShield()
    for (const url of readThroughQueries) {
      const first = await expectSameAsCms(h, url)
      expect(first.cmsHits, url).toBe(1)
      const again = await expectSameAsCms(h, url)
      expect(again.cmsHits, `${url} (cached)`).toBe(0)
    }
  })

  it('keys entries by the normalised query: repeated keys, _ and format do not cost another CMS request', async () => {
    h = await startShield()
    await h.get('/api/v1/cms/pages/?search=a&limit=5')
    const before = h.origin.hits.total
    for (const url of [
      '/api/v1/cms/pages/?search=a&limit=5&_=123',
      '/api/v1/cms/pages/?search=b&search=a&limit=5',
      '/api/v1/cms/pages/?format=json&search=a&limit=5',
      '/api/v1/cms/pages/?search=%61&limit=5',
    ]) {
      expect((await h.get(url)).status).toBe(200)
    }
    expect(h.origin.hits.total - before).toBe(0)
  })

  it("reports a check Wagtail runs first (order, type, translation_of) ahead of a search or date value it would fail on", async () => {
    h = await startShield()
    for (const url of [
      '/api/v1/cms/pages/?order=nope&search=x&search_operator=xor',
      '/api/v1/cms/pages/?search=x&search_operator=xor&order=-nope',
      '/api/v1/cms/pages/?type=cms.Nope&search=%20&fields=title',
      '/api/v1/cms/pages/?translation_of=abc&search=%E2%80%A8',
      '/api/v1/cms/pages/?type=cms.Nope&first_published_at=abc',
    ]) {
      const compared = await expectSameAsCms(h, url)
      expect(compared.status, url).toBe(400)
    }
    // The earlier checks pass at the CMS, which then fails on the search: the search's own 400.
    for (const [url, message] of [
      ['/api/v1/cms/pages/?order=title&search=x&search_operator=xor', "search_operator must be either 'or' or 'and'"],
      ['/api/v1/cms/pages/?order=-title&search=%20%20', 'the CMS could not answer this query: one of its parameters has a value it cannot use'],
    ] as const) {
      expect((await h.origin_get(url)).status, url).toBe(500)
      const shield = await h.get(url)
      expect(shield.status, url).toBe(400)
      expect(JSON.parse(shield.body)).toEqual({ message })
    }
  })

  it('asks the CMS every time for order=random, which must never be replayed', async () => {
    h = await startShield()
    h.origin.resetHits()
    await h.get('/api/v1/cms/pages/?order=random&limit=3')
    await h.get('/api/v1/cms/pages/?order=random&limit=3')
    expect(h.origin.hits.total).toBe(2)
  })

  it('coalesces 200 concurrent requests for a cold key into one CMS request', async () => {
    h = await startShield()
    h.origin.setLatency(250)
    h.origin.resetHits()
    const responses = await Promise.all(Array.from({ length: 200 }, () => h!.get('/api/v1/cms/pages/?search=health')))
    expect(h.origin.hits.total).toBe(1)
    const bodies = new Set(responses.map((r) => r.body))
    expect(bodies.size).toBe(1)
    expect(responses.every((r) => r.status === 200)).toBe(true)
  })

  describe('freshness windows (injected clock, no sleeping)', () => {
    let clock = 1_700_000_000_000
    const env = { CACHE_TTL: '30s', CACHE_STALE_WHILE_REVALIDATE: '60s', CACHE_STALE_IF_ERROR: '1h', CACHE_NEGATIVE_TTL: '5s', CACHE_TTL_JITTER_PERCENT: '0' }
    const start = async () => {
      clock = 1_700_000_000_000
      h = await startShield({ env, deps: { now: () => clock, random: () => 0 } })
      h.origin.resetHits()
      return h
    }
    const url = '/api/v1/cms/pages/?order=title&limit=3'

    it('does not ask the CMS while the entry is fresh', async () => {
      const harness = await start()
      await harness.get(url)
      clock += 29_999
      expect((await harness.get(url)).headers['cache-status']).toBe('cms-shield; hit')
      expect(harness.origin.hits.total).toBe(1)
    })

    it('serves stale within stale-while-revalidate and refreshes once in the background', async () => {
      const harness = await start()
      await harness.get(url)
      clock += 40_000
      const responses = await Promise.all(Array.from({ length: 20 }, () => harness.get(url)))
      expect(responses.every((r) => r.status === 200)).toBe(true)
      expect(responses[0]!.headers['cache-status']).toBe('cms-shield; hit; ttl=-10; detail=revalidating')
      await harness.app.shield.readThrough.settled()
      expect(harness.origin.hits.total).toBe(2)
      expect((await harness.get(url)).headers['cache-status']).toBe('cms-shield; hit')
    })

    it('serves stale while the CMS fails within stale-if-error, and never overwrites the good entry', async () => {
      const harness = await start()
      const good = await harness.get(url)
      harness.origin.setFault(() => ({ type: 'status', status: 503 }))
      clock += 30_000 + 60_000 + 1
      const served = await harness.get(url)
      expect(served.status).toBe(200)
      expect(served.body).toBe(good.body)
      expect(served.headers['cache-status']).toMatch(/^cms-shield; hit; ttl=-\d+; detail=cms-error$/)
      // Still the good entry after the failure. The next reader gets it at once, without waiting
      // for the CMS that has just failed; the CMS is asked again behind it.
      const again = await harness.get(url)
      expect(again.body).toBe(good.body)
      expect(again.headers['cache-status']).toMatch(/detail=cms-error$/)
      await harness.app.shield.readThrough.settled()
      expect(harness.origin.hits.total).toBe(3)
      // Past stale-if-error, a failing CMS is a 502.
      clock += 3_600_000
      expect((await harness.get(url)).status).toBe(502)
    })

    it('keeps the CMS\'s 400/404 for CACHE_NEGATIVE_TTL only', async () => {
      const harness = await start()
      const bad = '/api/v1/cms/pages/?order=nonsense'
      expect((await harness.get(bad)).status).toBe(400)
      clock += 4_999
      await harness.get(bad)
      expect(harness.origin.hits.total).toBe(1)
      clock += 1
      await harness.get(bad)
      await harness.app.shield.readThrough.settled()
      expect(harness.origin.hits.total).toBe(2)
    })
  })

  it('spreads expiry with CACHE_TTL_JITTER_PERCENT: never later than CACHE_TTL, at most that share earlier', async () => {
    let clock = 0
    let r = 0.99
    h = await startShield({ env: { CACHE_TTL: '100s', CACHE_TTL_JITTER_PERCENT: '20', CACHE_STALE_WHILE_REVALIDATE: '0s' }, deps: { now: () => clock, random: () => r } })
    h.origin.resetHits()
    await h.get('/api/v1/cms/pages/?order=slug')
    r = 0
    clock = 80_300 // 100 s less 19.8 % jitter = 80.2 s
    await h.get('/api/v1/cms/pages/?order=slug')
    expect(h.origin.hits.total).toBe(2)
  })

  it('never sends a client\'s Cookie or Authorization to the CMS, and never replays a Set-Cookie', async () => {
    h = await startShield()
    h.origin.resetHits()
    const response = await h.get('/api/v1/cms/pages/?search=x', { cookie: 'sessionid=secret', authorization: 'Basic Zm9vOmJhcg==' })
    expect(response.status).toBe(200)
    expect(response.headers['set-cookie']).toBeUndefined()
    expect(h.origin.requests).toHaveLength(1)
    const sent = h.origin.requests[0]!.headers
    expect(sent['cookie']).toBeUndefined()
    expect(sent['authorization']).toBeUndefined()
  })

  it('answers 502 with a JSON message when the CMS fails a read-through, and does not cache the failure', async () => {
    h = await startShield()
    h.origin.setFault(() => ({ type: 'status', status: 503 }))
    const failed = await h.get('/api/v1/cms/pages/?search=down')
    expect(failed.status).toBe(502)
    expect(failed.headers['content-type']).toBe('application/json')
    expect(JSON.parse(failed.body)).toEqual({ message: 'the CMS could not answer this query' })
    // The index keeps answering everything it can.
    expect((await h.get('/api/v1/cms/pages/?child_of=root')).status).toBe(200)
    h.origin.setFault(undefined)
    expect((await h.get('/api/v1/cms/pages/?search=down')).status).toBe(200)
  })

  it('drops read-through entries when a sync brings a changed tree', async () => {
    h = await startShield()
    const url = '/api/v1/cms/pages/?order=title&limit=1&fields=_,title'
    const before = JSON.parse((await h.get(url)).body)
    const first = h.origin.pages().find((p) => p.parentId !== null)!
    h.origin.updatePage(first.id, { title: '0 First in order' })
    const result = await h.app.shield.sync.syncNow()
    expect(result.ok && result.changed).toBe(true)
    const after = JSON.parse((await h.get(url)).body)
    expect(after.items[0].title).toBe('0 First in order')
    expect(after).not.toEqual(before)
  })
})
