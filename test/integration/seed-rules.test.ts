/**
 * The seed (docs/wagtail-compatibility.md#the-seed-the-production-api-as-observed), rule by rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SEED_PAGE_TYPES } from '../fake-wagtail/index.js'
import { BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness
let hitsAfterSync: number
beforeAll(async () => {
  h = await startShield()
  hitsAfterSync = h.origin.hits.total
})
afterAll(() => h.close())

const getJson = async (url: string) => {
  const response = await h.get(url)
  return { ...response, json: JSON.parse(response.body) }
}
const root = () => h.origin.pages().find((p) => p.parentId === null)!

describe('seed: list pages', () => {
  it('answers 200 with Content-Type application/json, Vary Accept and Allow GET, HEAD, OPTIONS', async () => {
    const { status, headers } = await h.get('/api/v1/cms/pages/')
    expect(status).toBe(200)
    expect(headers['content-type']).toBe('application/json')
    expect(headers['vary']).toBe('Accept')
    expect(headers['allow']).toBe('GET, HEAD, OPTIONS')
  })

  it('rule 1: the body is the list envelope', async () => {
    const { json } = await getJson('/api/v1/cms/pages/')
    expect(Object.keys(json)).toEqual(['meta', 'items'])
    expect(Object.keys(json.meta)).toEqual(['total_count'])
  })

  it('rule 2: child_of=<root>&show_in_menus=true&limit=250 holds only the root\'s direct children visible in menus, total_count = items', async () => {
    const { json } = await getJson(`/api/v1/cms/pages/?child_of=${root().id}&show_in_menus=true&limit=250`)
    const expected = h.origin.pages().filter((p) => p.parentId === root().id && p.showInMenus).map((p) => p.id)
    expect(json.items.map((i: { id: number }) => i.id)).toEqual(expected)
    expect(json.meta.total_count).toBe(json.items.length)
    expect(json.items.length).toBeGreaterThan(0)
  })

  it('rule 3: without limit, 20 items while total_count is 89', async () => {
    const { json } = await getJson('/api/v1/cms/pages/')
    expect(json.meta.total_count).toBe(89)
    expect(json.items).toHaveLength(20)
  })

  it('rule 4: items carry the list-item shape only, keys in Wagtail\'s order', async () => {
    const { json } = await getJson('/api/v1/cms/pages/?limit=250')
    for (const item of json.items) {
      expect(Object.keys(item)).toEqual(['id', 'meta', 'title'])
      expect(Object.keys(item.meta)).toEqual(['type', 'detail_url', 'html_url', 'slug', 'first_published_at'])
      expect(item.meta.detail_url).toBe(`${BASE_URL}/api/v1/cms/pages/${item.id}/`)
      expect(SEED_PAGE_TYPES).toContain(item.meta.type)
      expect(item.meta.first_published_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?([+-]\d\d:\d\d|Z)$/)
    }
  })

  it('accepts format=api with the same JSON body', async () => {
    const plain = await h.get('/api/v1/cms/pages/?child_of=root')
    const api = await h.get('/api/v1/cms/pages/?child_of=root&format=api')
    expect(api.headers['content-type']).toBe('application/json')
    expect(api.body).toBe(plain.body)
  })
})

describe('seed: retrieve one page', () => {
  it('answers the detail shape; meta.detail_url equals the request path under BASE_URL (rule 1)', async () => {
    for (const page of h.origin.pages().slice(0, 30)) {
      const { status, json, headers } = await getJson(`/api/v1/cms/pages/${page.id}/`)
      expect(status).toBe(200)
      expect(headers['content-type']).toBe('application/json')
      expect(json.meta.detail_url).toBe(`${BASE_URL}/api/v1/cms/pages/${page.id}/`)
      for (const key of ['type', 'detail_url', 'html_url', 'slug', 'first_published_at', 'show_in_menus', 'seo_title', 'search_description', 'parent']) {
        expect(json.meta).toHaveProperty(key)
      }
      if (json.meta.parent) expect(Object.keys(json.meta.parent.meta)).toEqual(['type', 'detail_url', 'html_url'])
    }
  })

  it('rule 2: meta.parent.id names the parent, and fetching it returns the parent', async () => {
    const page = h.origin.pages().find((p) => p.type === 'cms.GenericPage')!
    const { json } = await getJson(`/api/v1/cms/pages/${page.id}/`)
    expect(json.meta.parent.meta.detail_url).toBe(`${BASE_URL}/api/v1/cms/pages/${json.meta.parent.id}/`)
    const parent = await getJson(new URL(json.meta.parent.meta.detail_url).pathname)
    expect(parent.json.id).toBe(json.meta.parent.id)
    expect(parent.json.title).toBe(json.meta.parent.title)
  })

  it('rule 3: a page hidden from menus is absent from the show_in_menus=true list of its parent', async () => {
    const hidden = h.origin.pages().find((p) => !p.showInMenus && p.parentId !== null && h.origin.pages().some((s) => s.parentId === p.parentId && s.showInMenus))!
    const { json } = await getJson(`/api/v1/cms/pages/${hidden.id}/`)
    expect(json.meta.show_in_menus).toBe(false)
    const list = await getJson(`/api/v1/cms/pages/?child_of=${hidden.parentId}&show_in_menus=true&limit=250`)
    const ids = list.json.items.map((i: { id: number }) => i.id)
    expect(ids).not.toContain(hidden.id)
    expect(ids.length).toBeGreaterThan(0)
  })

  it('RedirectPages keep the other host in html_url; html_url is never rewritten', async () => {
    const redirect = h.origin.pages().find((p) => p.type === 'cms.RedirectPage')!
    const { json } = await getJson(`/api/v1/cms/pages/${redirect.id}/`)
    expect(json.meta.html_url).toBe(redirect.detailHtmlUrl)
    expect(new URL(json.meta.html_url).host).not.toBe(new URL(BASE_URL).host)
  })
})

describe('seed: cost', () => {
  it('made no CMS request for any of the reads above', () => {
    expect(h.origin.hits.total).toBe(hitsAfterSync)
  })
})
