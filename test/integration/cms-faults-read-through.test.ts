/**
 * CMS faults met by read-through queries, e.g. `?search=`, which only the CMS can answer:
 * the client gets a 502/504 in the API's JSON envelope with a generic message (the CMS's page and
 * address never reach it), the failure is not cached, concurrent identical requests cost the CMS
 * one request, a stored answer is served stale within CACHE_STALE_IF_ERROR (RFC 5861 §4), and
 * everything the snapshot answers keeps answering byte for byte. `read-through.test.ts` covers
 * the windows with a healthy CMS and a plain 503.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Fault } from '../fake-wagtail/index.js'
import { asServedByShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'
import {
  faultCases, metric, moved, PINO_WARN, READ_THROUGH_FAILED_MSG, READ_THROUGH_STALE_MSG, scrape, served, snapshotUrls, startObserved, TIMEOUT_ENV,
} from './cms-faults-support.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const SEARCH = '/api/v1/cms/pages/?search=foo'
const isSearch = (query: URLSearchParams) => query.get('search') === 'foo'

const GENERIC = {
  502: { message: 'the CMS could not answer this query' },
  504: { message: 'the CMS did not answer in time' },
} as const

/** What a client must never see of the CMS: its address (host and port). */
function expectNothingOfTheCms(h: Harness, response: { body: string; headers: Record<string, unknown> }): void {
  const { host, port } = new URL(h.origin.url)
  const seen = response.body + JSON.stringify(response.headers)
  expect(seen).not.toContain(host)
  expect(seen).not.toContain(`:${port}`)
}

describe('a read-through query that meets a failing CMS', () => {
  it.each(faultCases)('answers $clientStatus with a generic JSON message on $name, caches nothing, and answers for real once the CMS is back', async (c) => {
    const started = await startObserved({ env: c.env })
    h = started.h
    const { logs } = started
    const urls = snapshotUrls(h)
    const before = await served(h, urls)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? c.fault : undefined))
    h.origin.resetHits()
    logs.clear()
    const m0 = await scrape(h)

    const failed = await h.get(SEARCH)
    expect(failed.status).toBe(c.clientStatus)
    expect(JSON.parse(failed.body)).toEqual(GENERIC[c.clientStatus])
    expect(failed.headers).toMatchObject({ 'content-type': 'application/json', vary: 'Accept', allow: 'GET, HEAD, OPTIONS' })
    // Nothing that would let a browser or CDN keep the failure, nor look like a cached answer.
    for (const header of ['etag', 'cache-control', 'cache-status', 'age', 'set-cookie']) expect(failed.headers[header], header).toBeUndefined()
    expectNothingOfTheCms(h, failed)
    expect(h.origin.hits.total).toBe(1)

    // What the snapshot answers does not depend on the CMS.
    expect(await served(h, urls)).toEqual(before)
    expect(h.origin.hits.total).toBe(1)

    expect(logs.withMessage(READ_THROUGH_FAILED_MSG)).toMatchObject([{ level: PINO_WARN, code: c.code, query: '?search=foo', err: { code: c.code } }])
    expect(logs.withMessage('request').find((line) => line['url'] === SEARCH)).toMatchObject({ statusCode: c.clientStatus, cache: 'none', route: 'list' })
    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_http_requests_total', { route: 'list', status: String(c.clientStatus), cache: 'none' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total', { kind: 'list', status: c.cmsStatus })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total')).toBe(1)
    expect(metric(m1, 'cms_shield_cache_entries', { tier: 'memory' })).toBe(0)

    // The failure was not remembered: the very next request asks the CMS and gets its answer.
    h.origin.setFault(undefined)
    const recovered = await expectSameAsCms(h, SEARCH)
    expect(recovered.cmsHits).toBe(1)
    expect(recovered.headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    const cached = await expectSameAsCms(h, SEARCH)
    expect(cached.cmsHits).toBe(0)
    expect(cached.headers['cache-status']).toBe('cms-shield; hit')
  })

  it('never passes on the CMS\'s error page, even one that names the CMS', async () => {
    h = (await startObserved()).h
    const page = `<h1>Server Error (500)</h1><pre>Traceback: GET ${h.origin.url}/api/v1/cms/pages/?search=foo\nDATABASES = {'HOST': 'db.internal'}</pre>`
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? { type: 'status', status: 500, body: page } : undefined))
    const failed = await h.get(SEARCH)
    expect(failed.status).toBe(502)
    expect(JSON.parse(failed.body)).toEqual(GENERIC[502])
    expect(failed.body).not.toMatch(/Traceback|db\.internal/)
    expectNothingOfTheCms(h, failed)
  })

  it('does not replay a CMS 404 that is not the API\'s own (an HTML page from a misrouted CMS)', async () => {
    const started = await startObserved()
    h = started.h
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? { type: 'status', status: 404, body: '<h1>Not Found</h1>' } : undefined))
    const failed = await h.get(SEARCH)
    expect(failed.status).toBe(502)
    expect(JSON.parse(failed.body)).toEqual(GENERIC[502])
    expect(started.logs.withMessage(READ_THROUGH_FAILED_MSG)).toMatchObject([{ err: { code: 'UPSTREAM_BAD_RESPONSE' } }])
    h.origin.setFault(undefined)
    expect((await expectSameAsCms(h, SEARCH)).cmsHits).toBe(1)
  })

  it('does not replay a redirect to a login page (an auth proxy in front of the CMS), for a list or for find', async () => {
    const started = await startObserved()
    h = started.h
    const login = `${h.origin.url}/admin/login/?next=/api/v1/cms/pages/`
    const find = '/api/v1/cms/pages/find/?html_path=/no-such-page/'
    h.origin.setFault(() => ({ type: 'status', status: 302, body: '', headers: { Location: login } }))
    h.origin.resetHits()
    for (const url of [SEARCH, find]) {
      const failed = await h.get(url)
      expect(failed.status, url).toBe(502)
      expect(failed.headers['location'], url).toBeUndefined()
      expect(JSON.parse(failed.body), url).toEqual(GENERIC[502])
      expectNothingOfTheCms(h, failed)
    }
    expect(started.logs.withMessage(READ_THROUGH_FAILED_MSG).map((line) => line['code'])).toEqual(['UPSTREAM_BAD_RESPONSE', 'UPSTREAM_BAD_RESPONSE'])
    // Nothing of it was kept: once the CMS answers again, so does cms-shield.
    h.origin.setFault(undefined)
    for (const url of [SEARCH, find]) expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
    expect(h.origin.hits.total).toBe(6)
  })

  it('answers detail and find queries that go to the CMS the same way, while their snapshot answers stay 200', async () => {
    h = (await startObserved()).h
    const page = h.app.shield.sync.current!.pages.slice().find((p) => p.type === 'cms.GenericPage')!
    const forwarded = [`/api/v1/cms/pages/${page.id}/?fields=_,id,locale(x)`, '/api/v1/cms/pages/find/?html_path=/no-such-page/']
    h.origin.setFault(() => ({ type: 'reset' }))
    h.origin.resetHits()
    for (const url of forwarded) {
      const failed = await h.get(url)
      expect(failed.status, url).toBe(502)
      expect(JSON.parse(failed.body), url).toEqual(GENERIC[502])
      expectNothingOfTheCms(h, failed)
    }
    expect(h.origin.hits.total).toBe(2)
    expect((await h.get(`/api/v1/cms/pages/${page.id}/`)).status).toBe(200)
    expect((await h.get(`/api/v1/cms/pages/find/?id=${page.id}`)).status).toBe(302)
    expect(h.origin.hits.total).toBe(2)
    h.origin.setFault(undefined)
    for (const url of forwarded) expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
  })
})

describe('concurrent identical requests during a fault', () => {
  const concurrent: Array<[string, Fault, number, Record<string, string>]> = [
    ['the CMS hangs', { type: 'hang' }, 504, TIMEOUT_ENV],
    ['the CMS answers 503 slowly', { type: 'status', status: 503 }, 502, {}],
  ]

  it.each(concurrent)('share one CMS request when %s, and all get the same answer', async (_name, fault, status, env) => {
    h = (await startObserved({ env })).h
    h.origin.setLatency(200)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? fault : undefined))
    h.origin.resetHits()
    const responses = await Promise.all(Array.from({ length: 25 }, () => h!.get(SEARCH)))
    expect(h.origin.hits.total).toBe(1)
    expect(new Set(responses.map((r) => `${r.status} ${r.body}`)).size).toBe(1)
    expect(responses[0]!.status).toBe(status)
    expect(JSON.parse(responses[0]!.body)).toEqual(GENERIC[status as 502 | 504])

    // Once they have their answer, nothing is in flight or remembered: the next one asks again.
    h.origin.setLatency(0)
    h.origin.setFault(undefined)
    expect((await h.get(SEARCH)).status).toBe(200)
    expect(h.origin.hits.total).toBe(2)
  })
})

describe('a stored answer while the CMS fails', () => {
  const env = { CACHE_TTL: '30s', CACHE_STALE_WHILE_REVALIDATE: '60s', CACHE_STALE_IF_ERROR: '1h', CACHE_TTL_JITTER_PERCENT: '0' }
  const t0 = 1_700_000_000_000

  it.each(faultCases)('is served stale within CACHE_STALE_IF_ERROR on $name, and never replaced by the failure', async (c) => {
    let clock = t0
    const started = await startObserved({ env: { ...env, ...c.env }, deps: { now: () => clock, random: () => 0 } })
    h = started.h
    const { logs } = started
    const good = await h.get(SEARCH)
    expect(good.status).toBe(200)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? c.fault : undefined))
    h.origin.resetHits()
    logs.clear()
    // Past freshness (30 s) and stale-while-revalidate (60 s): only stale-if-error is left.
    clock += 100_000
    const m0 = await scrape(h)

    const stale = await h.get(SEARCH)
    expect(stale.status).toBe(200)
    expect(stale.body).toBe(good.body)
    expect(stale.headers['etag']).toBe(good.headers['etag'])
    expect(stale.headers['cache-status']).toBe('cms-shield; hit; ttl=-70; detail=cms-error')
    expect(stale.headers['age']).toBe('100')
    expect(h.origin.hits.total).toBe(1)
    const m1 = await scrape(h)
    expect(moved(m0, m1, 'cms_shield_stale_responses_total', { reason: 'cms-error' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_http_requests_total', { route: 'list', status: '200', cache: 'stale-error' })).toBe(1)
    expect(moved(m0, m1, 'cms_shield_cms_requests_total', { kind: 'list', status: c.cmsStatus })).toBe(1)
    expect(logs.withMessage(READ_THROUGH_STALE_MSG)).toMatchObject([{ level: PINO_WARN, code: c.code, err: { code: c.code } }])

    // The good entry is still there after the failure, and once the CMS is back (and the 5 s in
    // which readers of a failing key are not made to wait are over) it is refreshed.
    h.origin.setFault(undefined)
    clock += 5_000
    const refreshed = await h.get(SEARCH)
    expect(refreshed.headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect(h.origin.hits.total).toBe(2)
    expect(refreshed.body).toBe(asServedByShield((await h.origin_get(SEARCH)).body))
  })

  it('serves concurrent readers the stored answer on one CMS request, logged once', async () => {
    let clock = t0
    const started = await startObserved({ env, deps: { now: () => clock, random: () => 0 } })
    h = started.h
    const good = await h.get(SEARCH)
    h.origin.setLatency(200)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? { type: 'status', status: 503 } : undefined))
    h.origin.resetHits()
    started.logs.clear()
    clock += 100_000
    const responses = await Promise.all(Array.from({ length: 25 }, () => h!.get(SEARCH)))
    expect(h.origin.hits.total).toBe(1)
    expect(responses.every((r) => r.status === 200 && r.body === good.body && r.headers['cache-status'] === 'cms-shield; hit; ttl=-70; detail=cms-error')).toBe(true)
    expect(started.logs.withMessage(READ_THROUGH_STALE_MSG)).toMatchObject([{ code: 'UPSTREAM_BAD_STATUS' }])
  })

  it('keeps the stored answer when a background refresh fails, logs why, and refreshes once the CMS is back', async () => {
    let clock = t0
    const started = await startObserved({ env, deps: { now: () => clock, random: () => 0 } })
    h = started.h
    const { logs } = started
    const good = await h.get(SEARCH)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? { type: 'reset' } : undefined))
    h.origin.resetHits()
    logs.clear()
    clock += 40_000 // within stale-while-revalidate
    const stale = await h.get(SEARCH)
    expect(stale.body).toBe(good.body)
    expect(stale.headers['cache-status']).toBe('cms-shield; hit; ttl=-10; detail=revalidating')
    await h.app.shield.readThrough.settled()
    expect(h.origin.hits.total).toBe(1)
    expect(logs.withMessage('background refresh of a read-through entry failed')).toMatchObject([{ level: PINO_WARN, code: 'UPSTREAM_UNAVAILABLE' }])

    h.origin.setFault(undefined)
    const again = await h.get(SEARCH)
    expect(again.body).toBe(good.body)
    expect(again.headers['cache-status']).toBe('cms-shield; hit; ttl=-10; detail=revalidating')
    await h.app.shield.readThrough.settled()
    expect(h.origin.hits.total).toBe(2)
    expect((await h.get(SEARCH)).headers['cache-status']).toBe('cms-shield; hit')
  })

  it('is no longer served past CACHE_STALE_IF_ERROR: the client gets the generic 502', async () => {
    let clock = t0
    h = (await startObserved({ env, deps: { now: () => clock, random: () => 0 } })).h
    await h.get(SEARCH)
    h.origin.setFault((ctx) => (isSearch(ctx.query) ? { type: 'malformed-json' } : undefined))
    clock += 30_000 + 3_600_000
    const failed = await h.get(SEARCH)
    expect(failed.status).toBe(502)
    expect(JSON.parse(failed.body)).toEqual(GENERIC[502])
  })
})
