/**
 * ETag, If-None-Match → 304, Cache-Control and Cache-Status on every 200; bodies never change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness
beforeAll(async () => {
  h = await startShield({ env: { CLIENT_MAX_AGE: '45s', CLIENT_STALE_WHILE_REVALIDATE: '2m', CLIENT_STALE_IF_ERROR: '1h' } })
})
afterAll(() => h.close())

const urls = () => {
  const page = h.origin.pages().find((p) => p.type === 'cms.GenericPage')!
  return {
    detail: `/api/v1/cms/pages/${page.id}/`,
    list: '/api/v1/cms/pages/?child_of=root&show_in_menus=true&limit=250',
    readThrough: '/api/v1/cms/pages/?search=versicherung',
  }
}

describe('validators and caching headers', () => {
  it('sends a strong ETag, Cache-Control from the environment and Cache-Status with every 200', async () => {
    for (const [kind, url] of Object.entries(urls())) {
      const response = await h.get(url)
      expect(response.status, kind).toBe(200)
      expect(response.headers['etag'], kind).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
      expect(response.headers['cache-control'], kind).toBe('public, max-age=45, stale-while-revalidate=120, stale-if-error=3600')
      expect(response.headers['cache-status'], kind).toMatch(/^cms-shield; /)
    }
    expect((await h.get(urls().detail)).headers['cache-status']).toBe('cms-shield; hit; detail=snapshot')
  })

  it('keeps the ETag stable for the same bytes and different for different bytes', async () => {
    const a = await h.get(urls().detail)
    const b = await h.get(urls().detail)
    const other = await h.get('/api/v1/cms/pages/?limit=3')
    expect(a.headers['etag']).toBe(b.headers['etag'])
    expect(other.headers['etag']).not.toBe(a.headers['etag'])
  })

  it('answers 304 with ETag, Cache-Control and Vary, and no Allow or Content-Type, for a matching If-None-Match, on detail, list and read-through, GET and HEAD', async () => {
    for (const [kind, url] of Object.entries(urls())) {
      const full = await h.get(url)
      const etag = full.headers['etag'] as string
      for (const ifNoneMatch of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
        for (const method of ['GET', 'HEAD'] as const) {
          const response = await h.app.inject({ method, url, headers: { 'if-none-match': ifNoneMatch } })
          expect(response.statusCode, `${kind} ${method} ${ifNoneMatch}`).toBe(304)
          expect(response.body).toBe('')
          expect(response.headers['etag']).toBe(etag)
          expect(response.headers['cache-control']).toBe(full.headers['cache-control'])
          expect(response.headers['vary']).toBe('Accept')
          // RFC 9110 §15.4.5: no metadata beyond what guides the cache (Django's 304 drops Allow too).
          expect(response.headers['allow']).toBeUndefined()
          expect(response.headers['content-type']).toBeUndefined()
        }
      }
      const changed = await h.app.inject({ method: 'GET', url, headers: { 'if-none-match': '"something-else"' } })
      expect(changed.statusCode).toBe(200)
      expect(changed.body).toBe(full.body)
    }
  })

  it('never answers 304 for an error, whatever If-None-Match says', async () => {
    const response = await h.app.inject({ method: 'GET', url: '/api/v1/cms/pages/?limit=abc', headers: { 'if-none-match': '*' } })
    expect(response.statusCode).toBe(400)
    expect(response.headers['etag']).toBeUndefined()
    expect(response.headers['cache-control']).toBeUndefined()
  })

  it('says where a read-through answer came from, and how old it is', async () => {
    const url = '/api/v1/cms/pages/?order=-title&limit=2'
    const first = await h.get(url)
    expect(first.headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect(first.headers['age']).toBe('0')
    const second = await h.get(url)
    expect(second.headers['cache-status']).toBe('cms-shield; hit')
    expect(second.body).toBe(first.body)
  })

  it('gives a new ETag once the page changes in the CMS and a sync publishes it', async () => {
    const { detail } = urls()
    const before = (await h.get(detail)).headers['etag'] as string
    const id = Number(detail.split('/').at(-2))
    h.origin.updatePage(id, { title: 'Edited for the validator test' })
    await h.app.shield.sync.syncNow()
    const stale = await h.app.inject({ method: 'GET', url: detail, headers: { 'if-none-match': before } })
    expect(stale.statusCode).toBe(200)
    expect(stale.headers['etag']).not.toBe(before)
  })
})
