import { MockAgent } from 'undici'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { isProxyError, type ErrorCode } from '../errors.js'
import { createHttpClient } from './http-client.js'
import { createWagtailClient, findPath, listPath, rawPath, type WagtailClient } from './wagtail-client.js'

const ORIGIN = 'http://cms.test'
const JSON_HEADERS = { 'content-type': 'application/json' }
const API = '/wagtail/api/v1/cms/pages/'

const listing = JSON.stringify({
  meta: { total_count: 1 },
  items: [{ id: 3, meta: { type: 'home.HomePage', detail_url: 'http://cms.test/api/v1/cms/pages/3/', html_url: 'http://localhost/', slug: 'home', first_published_at: null }, title: 'Home' }],
})
const detail = JSON.stringify({
  id: 3,
  meta: {
    type: 'home.HomePage', detail_url: 'http://cms.test/api/v1/cms/pages/3/', html_url: 'http://localhost/', slug: 'home',
    show_in_menus: false, seo_title: '', search_description: '', first_published_at: null, parent: null,
  },
  title: 'Home',
})

let agent: MockAgent
let wagtail: WagtailClient

beforeEach(() => {
  agent = new MockAgent()
  agent.disableNetConnect()
  const http = createHttpClient({
    baseUrl: `${ORIGIN}/wagtail`, dispatcher: agent, connections: 1, timeoutMs: 1_000, retries: 0, maxBodyBytes: 1 << 20,
  })
  wagtail = createWagtailClient({ http })
})

afterEach(async () => {
  await agent.close()
})

const cms = () => agent.get(ORIGIN)

async function expectCode(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught)
  expect(isProxyError(error, code), String(error)).toBe(true)
}

describe('paths', () => {
  it('builds listing paths, leaving limit out when null', () => {
    expect(listPath({ offset: 0, limit: 250 })).toBe('/api/v1/cms/pages/?offset=0&limit=250')
    expect(listPath({ offset: 500, limit: null, extra: '&fields=show_in_menus' })).toBe('/api/v1/cms/pages/?offset=500&fields=show_in_menus')
    expect(() => listPath({ offset: -1, limit: 1 })).toThrow(TypeError)
    expect(() => listPath({ offset: 0, limit: 0 })).toThrow(TypeError)
  })

  it('builds find paths from text or URLSearchParams', () => {
    expect(findPath('?html_path=/blog-one/')).toBe('/api/v1/cms/pages/find/?html_path=/blog-one/')
    expect(findPath(new URLSearchParams({ html_path: 'a b' }))).toBe('/api/v1/cms/pages/find/?html_path=a+b')
    expect(findPath('')).toBe('/api/v1/cms/pages/find/')
  })

  it.each(['../admin/', '/api/v1/cms/pages/', '4', 'abc/', '4/extra/', '?a=b#frag', '?a b', 'find/../../'])('refuses read-through path %j', (path) => {
    expect(() => rawPath(path)).toThrow(TypeError)
  })

  it.each(['', '?search=blog&order=-title', '4/', '004/?fields=*', 'find/?html_path=blog-one'])('allows read-through path %j', (path) => {
    expect(rawPath(path)).toBe(`/api/v1/cms/pages/${path}`)
  })

  it('knows the absolute URL of the CMS API, path prefix included', () => {
    expect(wagtail.apiUrl).toBe('http://cms.test/wagtail/api/v1/cms/pages/')
  })
})

describe('listPages', () => {
  it('returns the unparsed listing text', async () => {
    cms().intercept({ path: `${API}?offset=0&limit=250`, method: 'GET' }).reply(200, listing, { headers: JSON_HEADERS })

    const response = await wagtail.listPages({ offset: 0, limit: 250 })

    expect(response.text).toBe(listing)
  })

  it('refuses a listing of the wrong shape', async () => {
    cms().intercept({ path: `${API}?offset=0&limit=250`, method: 'GET' }).reply(200, '{"items": []}', { headers: JSON_HEADERS })

    await expectCode(wagtail.listPages({ offset: 0, limit: 250 }), 'UPSTREAM_BAD_RESPONSE')
  })

  it('treats any status but 200 as UPSTREAM_BAD_STATUS', async () => {
    cms().intercept({ path: `${API}?offset=0&limit=999`, method: 'GET' })
      .reply(400, '{"message": "limit cannot be higher than 20"}', { headers: JSON_HEADERS })

    await expectCode(wagtail.listPages({ offset: 0, limit: 999 }), 'UPSTREAM_BAD_STATUS')
  })
})

describe('getPage', () => {
  it('returns a checked detail', async () => {
    cms().intercept({ path: `${API}3/`, method: 'GET' }).reply(200, detail, { headers: JSON_HEADERS })

    expect((await wagtail.getPage(3)).text).toBe(detail)
  })

  it('returns a 404 for a page gone since the listing', async () => {
    cms().intercept({ path: `${API}9/`, method: 'GET' }).reply(404, '{"message": "No Page matches the given query."}', { headers: JSON_HEADERS })

    expect((await wagtail.getPage(9)).status).toBe(404)
  })

  it('refuses a detail without its parent key', async () => {
    const broken = JSON.parse(detail) as { meta: Record<string, unknown> }
    delete broken.meta.parent
    cms().intercept({ path: `${API}3/`, method: 'GET' }).reply(200, JSON.stringify(broken), { headers: JSON_HEADERS })

    await expectCode(wagtail.getPage(3), 'UPSTREAM_BAD_RESPONSE')
  })

  it('throws UPSTREAM_BAD_STATUS for a 500', async () => {
    cms().intercept({ path: `${API}3/`, method: 'GET' }).reply(500, '<h1>Server Error (500)</h1>', { headers: { 'content-type': 'text/html' } })

    await expectCode(wagtail.getPage(3), 'UPSTREAM_BAD_STATUS')
  })
})

describe('find and raw', () => {
  it('returns find\'s 302 with its Location, unfollowed', async () => {
    cms().intercept({ path: `${API}find/?html_path=blog-one`, method: 'GET' })
      .reply(302, '', { headers: { location: 'http://localhost/api/v1/cms/pages/4/?', 'content-type': 'text/html; charset=utf-8' } })

    const response = await wagtail.find('html_path=blog-one')

    expect(response.status).toBe(302)
    expect(response.headers.location).toBe('http://localhost/api/v1/cms/pages/4/?')
  })

  it('throws on a find that fails with a 5xx', async () => {
    cms().intercept({ path: `${API}find/?id=abc`, method: 'GET' }).reply(500, 'boom')

    await expectCode(wagtail.find('id=abc'), 'UPSTREAM_BAD_STATUS')
  })

  it('passes any status through raw, for read-through to relay', async () => {
    cms().intercept({ path: `${API}find/?id=abc`, method: 'GET' }).reply(500, 'boom')

    const response = await wagtail.raw('find/?id=abc')

    expect(response.status).toBe(500)
    expect(response.text()).toBe('boom')
  })
})
