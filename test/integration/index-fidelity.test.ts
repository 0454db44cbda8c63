/**
 * Everything the tree index answers is answered exactly as the CMS would (same status, headers
 * and bytes, detail_urls on BASE_URL) and costs the CMS nothing once the tree is synced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness
let pages: FakePage[]
const pick = (predicate: (page: FakePage) => boolean): FakePage => {
  const found = pages.find(predicate)
  if (!found) throw new Error('the generated site lacks a page the test needs')
  return found
}

beforeAll(async () => {
  h = await startShield()
  pages = h.origin.pages()
})
afterAll(() => h.close())

const root = () => pick((p) => p.parentId === null)
const childrenOf = (id: number) => pages.filter((p) => p.parentId === id)
const landing = () => pick((p) => p.type === 'cms.LandingPage' && childrenOf(p.id).length > 2)
const deep = () => pick((p) => p.parentId !== null && p.parentId !== root().id && childrenOf(p.parentId).length > 0 && pages.find((q) => q.id === p.parentId)!.parentId !== root().id)
/** The page's slugs below the site root, as find's html_path routes them. */
const slugPath = (page: FakePage): string => {
  const parts: string[] = []
  for (let p: FakePage | undefined = page; p && p.parentId !== null; p = pages.find((q) => q.id === p!.parentId)) parts.unshift(p.slug)
  return parts.join('/')
}

describe('list answers from the index', () => {
  const queries = () => [
    '',
    '?limit=0',
    '?limit=250',
    '?offset=20',
    '?offset=85&limit=10',
    '?offset=100',
    '?child_of=root',
    `?child_of=${root().id}`,
    `?child_of=${root().id}&show_in_menus=true&limit=250`,
    `?child_of=${landing().id}&limit=5&offset=1`,
    `?descendant_of=${landing().id}`,
    '?descendant_of=root&limit=100',
    `?ancestor_of=${deep().id}`,
    // With ancestor_of between them, child_of and descendant_of combine (Wagtail's mark is lost).
    `?child_of=${deep().parentId}&ancestor_of=${deep().id}&descendant_of=root`,
    `?child_of=${pages.find((p) => p.id === deep().parentId)!.parentId}&ancestor_of=${deep().id}&descendant_of=${root().id}`,
    `?child_of=${root().id}&ancestor_of=${deep().id}&descendant_of=${landing().id}`,
    '?type=cms.GenericPage',
    '?type=cms.genericpage,cms.LandingPage&limit=50',
    '?type=cms.RedirectPage',
    '?type=wagtailcore.Page&limit=3',
    '?type=',
    '?show_in_menus=false&limit=100',
    '?show_in_menus=1&show_in_menus=0',
    `?id=${deep().id}`,
    '?id=99999999999999999999',
    `?title=${encodeURIComponent(landing().title)}`,
    `?slug=${landing().slug}&child_of=${root().id}`,
    '?seo_title=&limit=100',
    `?search_description=&type=cms.LandingPage`,
    '?format=json',
    '?format=api',
    '?_=1700000000000',
    '?limit=1&limit=2',
    '?limit=1_0',
    '?limit=%2B2',
    `?child_of=%20${root().id}%20`,
    '?fields=',
    '?search_operator=and',
  ]

  it('answers every documented list query like the CMS, with 0 CMS requests', async () => {
    for (const query of queries()) {
      const { cmsHits, status } = await expectSameAsCms(h, `/api/v1/cms/pages/${query}`)
      expect(status, query).toBe(200)
      expect(cmsHits, query).toBe(0)
    }
  })
})

describe('Wagtail\'s 400/404/406 texts for the index\'s parameters, answered locally', () => {
  const queries = () => [
    'limit=abc', 'limit=-1', 'limit=', 'limit=1.5', 'limit=251', 'limit=99999999999999999999',
    'offset=abc', 'offset=-1', 'offset=abc&limit=abc',
    'child_of=abc', 'child_of=-3', 'child_of=', 'child_of=999999', 'child_of=1', 'child_of=99999999999999999999',
    'descendant_of=abc', 'descendant_of=999999', `descendant_of=${root().id}&child_of=${root().id}`,
    'ancestor_of=abc', 'ancestor_of=999999',
    'type=abc', 'type=cms.A.B', 'foo=bar', 'zeta=1&alpha=2', 'date=2024-01-02', 'LIMIT=5&limit=2',
    'show_in_menus=abc', 'show_in_menus=True', 'id=abc', 'id=%201%20x', 'slug=%00', 'title=a%00b', 'alias_of=abc',
    'format=xml',
    'foo=1&type=nope', 'foo=1&limit=abc', 'id=abc&child_of=abc', 'limit=abc&fields=foo', 'child_of=abc&order=foo',
  ]

  it('refuses bad queries with the CMS\'s exact status and body, without asking it', async () => {
    for (const query of queries()) {
      const { cmsHits, status } = await expectSameAsCms(h, `/api/v1/cms/pages/?${query}`)
      expect([400, 404], query).toContain(status)
      expect(cmsHits, query).toBe(0)
    }
  })

  it('answers an offset past any integer with an empty page, where Wagtail on SQLite fails with a 500', async () => {
    const response = await h.get('/api/v1/cms/pages/?offset=99999999999999999999&limit=1')
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body)).toEqual({ meta: { total_count: pages.length }, items: [] })
  })

  it('answers DRF\'s 406 for an Accept header no renderer satisfies, and JSON for browsers', async () => {
    const refused = await expectSameAsCms(h, '/api/v1/cms/pages/?limit=1', { headers: { accept: 'text/plain' } })
    expect(refused.status).toBe(406)
    const browser = await h.get('/api/v1/cms/pages/?limit=1', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' })
    expect(browser.status).toBe(200)
    expect(browser.headers['content-type']).toBe('application/json')
  })

  it("answers DRF's 406 when ?format= keeps a renderer the Accept header does not take, before any 400 the query would get", async () => {
    for (const [query, accept] of [
      ['?format=json&limit=1', 'application/xml'],
      ['?format=json&limit=abc&order=nope', 'text/html'],
      ['?format=api&child_of=abc', 'application/json'],
      ['?format=api&limit=1', 'application/json;q=0.9'],
    ] as const) {
      for (const path of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${pages[1]!.id}/`, '/api/v1/cms/pages/find/']) {
        const { status, cmsHits } = await expectSameAsCms(h, `${path}${query}`, { headers: { accept } })
        expect(status, `${path}${query} Accept: ${accept}`).toBe(406)
        expect(cmsHits).toBe(0)
      }
    }
    // A renderer the format keeps that the header takes: answered as usual.
    expect((await h.get('/api/v1/cms/pages/?format=json&limit=1', { accept: 'application/*' })).status).toBe(200)
  })
})

describe('detail answers from the index', () => {
  it('serves every page\'s detail exactly as the CMS does, with 0 CMS requests', async () => {
    for (const page of pages) {
      const { cmsHits } = await expectSameAsCms(h, `/api/v1/cms/pages/${page.id}/`)
      expect(cmsHits).toBe(0)
    }
  })

  it('applies the filter backends and ignores what the detail view ignores', async () => {
    const page = deep()
    const other = pick((p) => p.id !== page.parentId && p.id !== page.id)
    for (const url of [
      `/api/v1/cms/pages/00${page.id}/`,
      `/api/v1/cms/pages/${page.id}/?foo=bar`,
      `/api/v1/cms/pages/${page.id}/?limit=abc&offset=-5`,
      `/api/v1/cms/pages/${page.id}/?child_of=${page.parentId}`,
      `/api/v1/cms/pages/${page.id}/?child_of=${other.id}`,
      `/api/v1/cms/pages/${page.id}/?descendant_of=root`,
      `/api/v1/cms/pages/${page.id}/?ancestor_of=${page.id}`,
      `/api/v1/cms/pages/${page.id}/?type=cms.IndexPage`,
      `/api/v1/cms/pages/${page.id}/?type=${page.type.toLowerCase().replace('cms.', 'cms.')}`,
      `/api/v1/cms/pages/${page.id}/?title=nomatch`,
      `/api/v1/cms/pages/${page.id}/?show_in_menus=${page.showInMenus}`,
      `/api/v1/cms/pages/${page.id}/?child_of=abc`,
      `/api/v1/cms/pages/${page.id}/?type=nope`,
      `/api/v1/cms/pages/${page.id}/?format=xml`,
      '/api/v1/cms/pages/999999/',
      '/api/v1/cms/pages/0/',
      '/api/v1/cms/pages/99999999999999999999/',
    ]) {
      const { cmsHits } = await expectSameAsCms(h, url)
      expect(cmsHits, url).toBe(0)
    }
  })

  it('gives the site root "parent": null and every other page its parent, whose detail is that page', async () => {
    const rootDetail = JSON.parse((await h.get(`/api/v1/cms/pages/${root().id}/`)).body)
    expect(rootDetail.meta.parent).toBeNull()
    const page = deep()
    const detail = JSON.parse((await h.get(`/api/v1/cms/pages/${page.id}/`)).body)
    expect(detail.meta.parent.id).toBe(page.parentId)
    expect(detail.meta.parent.meta.detail_url).toBe(`https://shield.example/api/v1/cms/pages/${page.parentId}/`)
    const parent = JSON.parse((await h.get(`/api/v1/cms/pages/${page.parentId}/`)).body)
    expect(parent.id).toBe(page.parentId)
  })
})

describe('find/ from the index', () => {
  it('redirects like the CMS, to BASE_URL, keeping other parameters (Wagtail 7.1+)', async () => {
    const page = deep()
    const path = `/${slugPath(page)}/`
    for (const url of [
      '/api/v1/cms/pages/find/?html_path=/',
      `/api/v1/cms/pages/find/?html_path=${path}`,
      `/api/v1/cms/pages/find/?html_path=${path.slice(1, -1)}`,
      `/api/v1/cms/pages/find/?id=${page.id}`,
      `/api/v1/cms/pages/find/?id=${page.id}&fields=_,id&foo=bar&foo=baz`,
      `/api/v1/cms/pages/find/?html_path=${path}&type=cms.IndexPage&id=${root().id}`,
      '/api/v1/cms/pages/find/',
      '/api/v1/cms/pages/find/?id=999999',
      `/api/v1/cms/pages/find/?html_path=${path}&type=cms.IndexPage`,
      `/api/v1/cms/pages/find/?id=${page.id}&type=nope`,
    ]) {
      const { cmsHits } = await expectSameAsCms(h, url)
      expect(cmsHits, url).toBe(0)
    }
    const redirect = await h.get(`/api/v1/cms/pages/find/?id=${page.id}&fields=_,id`, { host: 'evil.example' })
    expect(redirect.status).toBe(302)
    expect(redirect.headers['location']).toBe(`https://shield.example/api/v1/cms/pages/${page.id}/?fields=_%2Cid`)
  })

  it('asks the CMS about a path its slug tree does not know, and answers what it says', async () => {
    const { cmsHits, status } = await expectSameAsCms(h, '/api/v1/cms/pages/find/?html_path=/no/such/page/')
    expect(status).toBe(404)
    expect(cmsHits).toBe(1)
  })
})

describe('HTTP semantics', () => {
  it('answers HEAD like GET without a body, Content-Length included', async () => {
    for (const url of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${landing().id}/`, '/api/v1/cms/pages/999999/', '/api/v1/cms/pages/?limit=abc']) {
      const get = await h.get(url)
      const head = await h.app.inject({ method: 'HEAD', url })
      expect(head.statusCode).toBe(get.status)
      expect(head.body).toBe('')
      expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)))
      expect(head.headers['content-type']).toBe('application/json')
      await expectSameAsCms(h, url, { method: 'HEAD' })
    }
  })

  it('answers OPTIONS with DRF\'s metadata on every route, whatever the query', async () => {
    for (const url of ['/api/v1/cms/pages/', '/api/v1/cms/pages/4/', '/api/v1/cms/pages/999999/', '/api/v1/cms/pages/?limit=abc', '/api/v1/cms/pages/find/']) {
      const { status, headers } = await expectSameAsCms(h, url, { method: 'OPTIONS' })
      expect(status).toBe(200)
      expect(headers['content-length']).toBe('248')
    }
  })

  it('refuses other methods with DRF\'s 405 and Allow', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const url of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${landing().id}/`, '/api/v1/cms/pages/find/']) {
        const { status, body } = await expectSameAsCms(h, url, { method, headers: { 'content-type': 'application/xml' } })
        expect(status).toBe(405)
        expect(JSON.parse(body)).toEqual({ detail: `Method "${method}" not allowed.` })
      }
    }
  })

  it('redirects a missing trailing slash with 301, query kept', async () => {
    for (const url of ['/api/v1/cms/pages', '/api/v1/cms/pages?limit=1', `/api/v1/cms/pages/${landing().id}`, `/api/v1/cms/pages/${landing().id}?fields=_,id`, '/api/v1/cms/pages/find']) {
      const { status } = await expectSameAsCms(h, url)
      expect(status).toBe(301)
    }
  })

  it('routes on the percent-decoded path, as Django does', async () => {
    const page = landing()
    const encoded = await h.get(`/api/v1/cms/pages/${String(page.id).split('').map((d) => `%3${d}`).join('')}/`)
    expect(encoded.status).toBe(200)
    expect(encoded.body).toBe((await h.get(`/api/v1/cms/pages/${page.id}/`)).body)
    expect((await h.get(`/api/v1/cms/pages/find%2F?id=${page.id}`)).status).toBe(302)
  })

  it('answers DRF\'s 405 for methods Fastify has no route for, and Django\'s 404 for a path that does not decode', async () => {
    for (const method of ['PROPFIND', 'SEARCH']) {
      const response = await h.app.inject({ method: method as 'GET', url: '/api/v1/cms/pages/' })
      expect(response.statusCode).toBe(405)
      expect(JSON.parse(response.body)).toEqual({ detail: `Method "${method}" not allowed.` })
      expect(response.headers['allow']).toBe('GET, HEAD, OPTIONS')
    }
    const broken = await h.get('/api/v1/cms/pages/%E0%A4%A/')
    expect(broken.status).toBe(404)
    expect(broken.headers['content-type']).toBe('text/html; charset=utf-8')
  })

  it('answers Django\'s HTML 404 outside the API\'s routes, never proxying them', async () => {
    const before = h.origin.hits.total
    for (const url of ['/api/v1/cms/pages/abc/', '/api/v1/cms/pages/-1/', '/api/v1/cms/pages/4/extra/', '/api/v1/cms/', '/admin/', '/api/v1/cms/images/']) {
      const response = await h.get(url)
      expect(response.status, url).toBe(404)
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(response.headers['content-length']).toBe('179')
    }
    expect(h.origin.hits.total).toBe(before)
  })
})
