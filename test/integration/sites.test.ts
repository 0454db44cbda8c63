/**
 * Several Sites on one CMS (SITES): Wagtail answers each request from the Site its Host names,
 * the default Site for any other Host. cms-shield keeps a tree per Site, synced asking as that Site,
 * and answers each Host from its Site's tree; `detail_url` stays on BASE_URL whatever the Host. A
 * PURGE with another Site's Host refreshes that Site's tree only.
 */
import { PARTNER_HOST as PARTNER, PARTNER_OFFSET as OFFSET, partnerPages } from '../fake-wagtail/sample-layouts.js'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})


/** A second Site's tree: a generated site with ids apart from the default Site's. */

function start(env: Record<string, string> = {}, autoSync = false): Promise<Harness> {
  return startShield({
    origin: { apiPath: '/api/v2/', sites: { [PARTNER]: partnerPages() } },
    env: { API_PATH: '/api/v2/', SITES: PARTNER, REFRESH_DEBOUNCE: '20ms', ...env },
    deps: { autoSync },
  })
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
  it('answers a Host naming another Site from that Site\'s own tree, exactly and at no CMS cost, detail_url on BASE_URL', async () => {
    h = await start()
    for (const url of ['/api/v2/pages/', '/api/v2/pages/?limit=3&offset=2', `/api/v2/pages/${OFFSET + 3}/`, '/api/v2/pages/3/', `/api/v2/pages/find/?id=${OFFSET + 3}`, `/api/v2/pages/?child_of=${OFFSET + 2}`, '/api/v2/pages/find/?html_path=/']) {
      expect((await compare(url, `${PARTNER}:8080`)).cmsHits, url).toBe(0)
      expect((await compare(url, PARTNER)).cmsHits, `${url} (any port)`).toBe(0)
    }
    const partnerHome = JSON.parse((await h.get(`/api/v2/pages/${OFFSET + 2}/`, { host: PARTNER })).body)
    expect(partnerHome.meta.detail_url).toBe(`${BASE_URL}/api/v2/pages/${OFFSET + 2}/`)
  })

  it('forwards what only the CMS answers asking as that Site, and caches it apart from the default Site\'s', async () => {
    h = await start()
    for (const url of ['/api/v2/pages/?order=title&limit=5', '/api/v2/pages/?search=insurance', `/api/v2/pages/?translation_of=${OFFSET + 3}`, `/api/v2/pages/${OFFSET + 3}/?fields=_,locale(x)`]) {
      expect((await compare(url, PARTNER)).cmsHits, url).toBe(1)
      expect((await compare(url, PARTNER)).cmsHits, `${url} (cached)`).toBe(0)
    }
    // The same query on the default Site is its own: asked again, as the default Site.
    for (const url of ['/api/v2/pages/?order=title&limit=5', '/api/v2/pages/?search=insurance']) {
      expect((await compare(url, 'localhost')).cmsHits, `${url} (the default Site's, apart)`).toBe(1)
    }
  })

  it('syncs each Site\'s tree asking as that Site, and is ready once every tree is loaded', async () => {
    h = await start()
    const partnerSync = h.origin.requests.filter((request) => request.headers['host'] === PARTNER)
    expect(partnerSync.some((request) => request.kind === 'list')).toBe(true)
    expect(h.app.shield.sites.get(PARTNER)!.sync.current!.pages.length).toBe(15)
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(JSON.parse(ready.body).sites).toEqual({ [PARTNER]: { ready: true, pages: 15, cms: 'ok' } })
  })

  it('shows each Site\'s tree in the snapshot metrics, the default Site\'s without a site label', async () => {
    h = await start()
    const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
    const defaultPages = h.app.shield.sync.current!.pages.length
    expect(metrics).toMatch(new RegExp(`^cms_shield_snapshot_pages ${defaultPages}$`, 'm'))
    expect(metrics).toMatch(/^cms_shield_snapshot_pages\{site="partner\.localhost"\} 15$/m)
    expect(metrics).toMatch(/^cms_shield_snapshot_version\{site="partner\.localhost"\} 1$/m)
  })

  it('answers the default Site from its tree for its own Host, an unknown one or none, at no CMS cost', async () => {
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
    expect((await h.get('/api/v2/pages/?limit=2', { host: PARTNER })).body).toBe(partner.body)
  })

  it('refreshes another Site\'s tree after a PURGE of one of its pages\' URLs with its Host, and leaves the default Site\'s alone', async () => {
    h = await start({}, true)
    const id = OFFSET + 3
    const url = `/api/v2/pages/${id}/`
    const path = new URL(JSON.parse((await h.get(url, { host: PARTNER })).body).meta.html_url as string).pathname
    h.origin.updateSitePage(PARTNER, id, { title: 'Renamed on the partner site' })
    h.origin.resetHits()
    const purge = await h.app.inject({ method: 'PURGE', url: path, headers: { host: PARTNER }, remoteAddress: '127.0.0.1' })
    expect(JSON.parse(purge.body)).toEqual({ status: 'ok', target: 'page', id })
    await eventually(async () => JSON.parse((await h!.get(url, { host: PARTNER })).body).title === 'Renamed on the partner site')
    expect(h.origin.requests.every((request) => request.headers['host'] === PARTNER), 'no request for the default Site').toBe(true)
  })

  it('refreshes the tree that holds a page purged by its API URL on another host', async () => {
    h = await start({}, true)
    const url = `/api/v2/pages/${OFFSET + 4}/`
    h.origin.updateSitePage(PARTNER, OFFSET + 4, { title: 'Purged by its API URL' })
    await h.app.inject({ method: 'PURGE', url, headers: { host: 'cms.internal' }, remoteAddress: '127.0.0.1' })
    await eventually(async () => JSON.parse((await h!.get(url, { host: PARTNER })).body).title === 'Purged by its API URL')
  })
})

/** Polls (bounded) until `check` holds. */
async function eventually(check: () => Promise<boolean>, ms = 3000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('?site= beside SITES', () => {
  it('is the CMS\'s to answer, on any Host, exactly', async () => {
    h = await start()
    for (const [url, host] of [
      [`/api/v2/pages/?site=${PARTNER}&limit=3`, 'localhost'],
      [`/api/v2/pages/${OFFSET + 3}/?site=${PARTNER}`, 'localhost'],
      ['/api/v2/pages/?site=localhost&limit=3', PARTNER],
      ['/api/v2/pages/?site=nope', 'localhost'],
    ] as const) {
      expect((await compareAsAny(url, host)).status, `${host} ${url}`).toBeLessThan(500)
    }
  })
})

/** `compare`, but a CMS 500 for an unknown Site is cms-shield's 404 (Wagtail 8.0's answer). */
async function compareAsAny(url: string, host: string): Promise<{ status: number }> {
  const theirs = await request(h!.origin.url + url, { headers: { host } })
  await theirs.body.dump()
  if (theirs.statusCode === 500) {
    const ours = await h!.app.inject({ method: 'GET', url, headers: { host } })
    expect(ours.statusCode).toBe(404)
    expect(JSON.parse(ours.body)).toEqual({ message: 'No Site matches the given query.' })
    return { status: ours.statusCode }
  }
  return compare(url, host)
}

describe('another Site\'s answers where Wagtail fails with a 500', () => {
  it('are the 4xx the default Site gets from memory, never a 5xx', async () => {
    h = await start()
    for (const url of ['/api/v2/pages/?first_published_at=abc', '/api/v2/pages/find/?id=abc', '/api/v2/pages/?site=nope']) {
      const main = await h.get(url)
      const partner = await h.get(url, { host: PARTNER })
      expect(main.status, url).toBeLessThan(500)
      expect({ status: partner.status, body: partner.body }, url).toEqual({ status: main.status, body: main.body })
    }
  })
})

describe('the router\'s other endpoints on another Site', () => {
  it('are asked as that Site, so a document\'s download_url is on its host, and cached apart', async () => {
    h = await startShield({
      origin: { apiPath: '/api/v2/', sites: { [PARTNER]: partnerPages() }, media: { images: [], documents: [{ id: 1, title: 'Report', file: 'documents/report.pdf' }] } },
      env: { API_PATH: '/api/v2/', SITES: PARTNER, API_ENDPOINTS: 'images,documents' },
    })
    const main = JSON.parse((await h.get('/api/v2/documents/1/')).body)
    const partner = JSON.parse((await h.get('/api/v2/documents/1/', { host: PARTNER })).body)
    expect(main.meta.download_url).toBe('http://localhost/documents/1/report.pdf')
    expect(partner.meta.download_url).toBe(`http://${PARTNER}/documents/1/report.pdf`)
    expect(partner.meta.detail_url).toBe(`${BASE_URL}/api/v2/documents/1/`)
    await compare('/api/v2/documents/1/', PARTNER)
  })
})
