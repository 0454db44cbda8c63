/**
 * Several Sites on one CMS (SITES): Wagtail answers each request from the Site its Host names,
 * the default Site for any other Host. cms-shield answers the default Site from the snapshot and
 * another Site's pages read-through, asking as that Site; `detail_url` stays on BASE_URL whatever
 * the Host. A PURGE with another Site's Host refreshes that Site's answers only.
 */
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, type FakePage } from '../fake-wagtail/index.js'
import { BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const PARTNER = 'partner.localhost'
const OFFSET = 10_000

/** A second Site's tree: a generated site with ids apart from the default Site's. */
function partnerPages(): FakePage[] {
  const shift = (id: number | null | undefined) => (id === null || id === undefined ? id : id + OFFSET)
  return generateSite({ pages: 15, seed: 7 }).map((page) => ({ ...page, id: page.id + OFFSET, parentId: shift(page.parentId) as number | null, ...(page.aliasOf == null ? {} : { aliasOf: shift(page.aliasOf) as number }) }))
}

function start(env: Record<string, string> = {}): Promise<Harness> {
  return startShield({ origin: { apiPath: '/api/v2/', sites: { [PARTNER]: partnerPages() } }, env: { API_PATH: '/api/v2/', SITES: PARTNER, ...env } })
}

/** The same request to both, with a Host; the CMS's detail_urls (on the Site's root_url) moved to BASE_URL. */
async function compare(url: string, host: string): Promise<{ cmsHits: number; status: number; body: string; headers: Record<string, unknown> }> {
  const before = h!.origin.hits.total
  const ours = await h!.app.inject({ method: 'GET', url, headers: { host } })
  const cmsHits = h!.origin.hits.total - before
  // undici's request, not fetch: fetch does not let a caller set Host.
  const theirs = await request(h!.origin.url + url, { headers: { host } })
  const body = (await theirs.body.text()).replaceAll(/http:\/\/(?:localhost|partner\.localhost)\/api\/v2\//g, `${BASE_URL}/api/v2/`)
  expect(ours.statusCode, `${host} ${url}`).toBe(theirs.statusCode)
  expect(ours.body, `${host} ${url}`).toBe(body)
  const location = theirs.headers['location']
  if (typeof location === 'string') expect(ours.headers['location']).toBe(location.replace(/^http:\/\/[^/]+/, BASE_URL))
  return { cmsHits, status: ours.statusCode, body: ours.body, headers: ours.headers }
}

describe('several Sites (SITES)', () => {
  it('answers a Host naming another Site as that Site does, read-through once per query, detail_url on BASE_URL', async () => {
    h = await start()
    for (const url of ['/api/v2/pages/', '/api/v2/pages/?limit=3&offset=2', `/api/v2/pages/${OFFSET + 3}/`, '/api/v2/pages/3/', `/api/v2/pages/find/?id=${OFFSET + 3}`, '/api/v2/pages/?child_of=3']) {
      const first = await compare(url, `${PARTNER}:8080`)
      expect(first.cmsHits, url).toBe(1)
      expect((await compare(url, PARTNER)).cmsHits, `${url} (cached, any port)`).toBe(0)
    }
    const partnerHome = JSON.parse((await h.get(`/api/v2/pages/${OFFSET + 2}/`, { host: PARTNER })).body)
    expect(partnerHome.meta.detail_url).toBe(`${BASE_URL}/api/v2/pages/${OFFSET + 2}/`)
  })

  it('answers the default Site from the snapshot for its own Host, an unknown one or none, at no CMS cost', async () => {
    h = await start()
    for (const host of ['localhost', 'api.example.com', 'unknown.example:81']) {
      for (const url of ['/api/v2/pages/?limit=5', '/api/v2/pages/3/', `/api/v2/pages/${OFFSET + 3}/`]) {
        expect((await compare(url, host)).cmsHits, `${host} ${url}`).toBe(0)
      }
    }
  })

  it('never serves one Site\'s answer to another, whichever is asked first', async () => {
    h = await start()
    const main = await h.get('/api/v2/pages/?limit=2')
    const partner = await h.get('/api/v2/pages/?limit=2', { host: PARTNER })
    expect(partner.body).not.toBe(main.body)
    expect((await h.get('/api/v2/pages/?limit=2')).body).toBe(main.body)
    expect(partner.headers['surrogate-key']).toBe(`cms-pages cms-site-${PARTNER}`)
  })

  it('refreshes another Site\'s answers after a PURGE with its Host, and leaves the default Site alone', async () => {
    h = await start()
    const url = `/api/v2/pages/${OFFSET + 3}/`
    await h.get(url, { host: PARTNER })
    h.origin.updateSitePage(PARTNER, OFFSET + 3, { title: 'Renamed on the partner site' })
    expect(JSON.parse((await h.get(url, { host: PARTNER })).body).title).not.toBe('Renamed on the partner site')
    h.origin.resetHits()
    const purge = await h.app.inject({ method: 'PURGE', url: '/some-page/', headers: { host: PARTNER }, remoteAddress: '127.0.0.1' })
    expect(JSON.parse(purge.body)).toEqual({ status: 'ok', target: 'site' })
    expect(JSON.parse((await h.get(url, { host: PARTNER })).body).title).toBe('Renamed on the partner site')
    expect(h.origin.hits.total).toBe(1) // the partner's detail, and no sync of the default Site
  })

  it('takes a PURGE of an API URL naming a page the snapshot does not hold as one for every other Site', async () => {
    h = await start()
    const url = `/api/v2/pages/${OFFSET + 4}/`
    await h.get(url, { host: PARTNER })
    h.origin.updateSitePage(PARTNER, OFFSET + 4, { title: 'Purged by its API URL' })
    await h.app.inject({ method: 'PURGE', url, headers: { host: 'cms.internal' }, remoteAddress: '127.0.0.1' })
    expect(JSON.parse((await h.get(url, { host: PARTNER })).body).title).toBe('Purged by its API URL')
  })
})
