/**
 * The sync publishes a new snapshot only when it read one consistent tree; whatever goes wrong,
 * readers keep getting the last good one.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Fault, FaultContext } from '../fake-wagtail/index.js'
import { expectSameAsCms } from './compare.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** Edits one page in the CMS, so a successful sync would be visible. */
function editSomePage(harness: Harness): { id: number; url: string; oldTitle: string; newTitle: string } {
  const page = harness.origin.pages().find((p) => p.parentId !== null && p.type === 'cms.GenericPage')!
  const newTitle = `${page.title} (edited)`
  harness.origin.updatePage(page.id, { title: newTitle })
  return { id: page.id, url: `/api/v1/cms/pages/${page.id}/`, oldTitle: page.title, newTitle }
}

async function titleServed(harness: Harness, url: string): Promise<string> {
  const response = await harness.get(url)
  expect(response.status).toBe(200)
  return JSON.parse(response.body).title
}

describe('a failed sync keeps serving the previous snapshot', () => {
  const faults: Array<[string, (ctx: FaultContext) => Fault | undefined, Record<string, string>?]> = [
    ['the CMS answers 500 on details', (ctx) => (ctx.kind === 'detail' ? { type: 'status', status: 500 } : undefined)],
    ['the CMS answers 503 on the listing', (ctx) => (ctx.kind === 'list' ? { type: 'status', status: 503 } : undefined)],
    ['the CMS times out', (ctx) => (ctx.kind === 'detail' && ctx.hitNumber % 7 === 0 ? { type: 'hang' } : undefined), { UPSTREAM_TIMEOUT: '300ms' }],
    ['the connection is reset', (ctx) => (ctx.kind === 'list' ? { type: 'reset' } : undefined)],
    ['a detail is malformed JSON', (ctx) => (ctx.kind === 'detail' && ctx.hitNumber % 5 === 0 ? { type: 'malformed-json' } : undefined)],
    ['a detail has the wrong content type', (ctx) => (ctx.kind === 'detail' ? { type: 'wrong-content-type' } : undefined)],
    ['a body exceeds the size cap', (ctx) => (ctx.kind === 'list' ? { type: 'oversize', bytes: 200_000 } : undefined), { UPSTREAM_MAX_BODY: '100kb' }],
  ]

  it.each(faults)('when %s', async (_name, fault, env = {}) => {
    h = await startShield({ env })
    const edit = editSomePage(h)
    const versionBefore = h.app.shield.sync.current!.version
    h.origin.setFault(fault)
    // A full sync reads every detail, so a fault on any of them is met.
    const result = await h.app.shield.sync.syncNow({ full: true })
    expect(result.ok).toBe(false)
    expect(h.app.shield.sync.current!.version).toBe(versionBefore)
    expect(await titleServed(h, edit.url)).toBe(edit.oldTitle)
    const ready = await h.get('/readyz')
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body).sync.consecutiveFailures).toBe(1)

    // Once the CMS is healthy again, the next sync publishes the edit.
    h.origin.setFault(undefined)
    const recovered = await h.app.shield.sync.syncNow()
    expect(recovered).toMatchObject({ ok: true, changed: true })
    expect(await titleServed(h, edit.url)).toBe(edit.newTitle)
  })
})

describe('an inconsistent tree is never published', () => {
  it('refuses a listing whose total_count changes while paging', async () => {
    h = await startShield({ origin: { limitMax: 20 } })
    const edit = editSomePage(h)
    const extra = h.origin.pages().find((p) => p.parentId !== null)!
    let added = false
    h.origin.onRequest((ctx) => {
      // An editor publishes a page between the first and second listing page.
      if (ctx.kind === 'list' && ctx.query.get('offset') === '20' && !added) {
        added = true
        h!.origin.addPage({ ...extra, id: 990_001, slug: 'brand-new', title: 'Brand new' })
      }
    })
    const result = await h.app.shield.sync.syncNow()
    expect(result.ok).toBe(false)
    expect(!result.ok && result.error.message).toMatch(/total_count changed from 89 to 90/)
    expect(await titleServed(h, edit.url)).toBe(edit.oldTitle)
    expect((await h.get('/api/v1/cms/pages/990001/')).status).toBe(404)
  })

  it('refuses a listing with a page listed twice', async () => {
    h = await startShield()
    const listing = JSON.parse((await h.origin_get('/api/v1/cms/pages/?limit=250')).body)
    listing.items[5] = listing.items[4]
    h.origin.setFault((ctx) => (ctx.kind === 'list' && ctx.query.get('offset') === '0' ? { type: 'json', status: 200, body: listing } : undefined))
    const result = await h.app.shield.sync.syncNow()
    expect(!result.ok && result.error.message).toMatch(/is listed twice/)
  })

  it('refuses a detail whose parent is not in the tree', async () => {
    h = await startShield()
    const page = h.origin.pages().find((p) => p.type === 'cms.GenericPage')!
    const detail = JSON.parse((await h.origin_get(`/api/v1/cms/pages/${page.id}/`)).body)
    detail.meta.parent.id = 424_242
    h.origin.setFault((ctx) => (ctx.kind === 'detail' && ctx.id === page.id ? { type: 'json', status: 200, body: detail } : undefined))
    const result = await h.app.shield.sync.syncNow({ full: true })
    expect(!result.ok && result.error.message).toMatch(/names parent 424242, which is not in the tree/)
  })

  it('refuses a cycle in the parent links', async () => {
    h = await startShield()
    const [a, b] = h.origin.pages().filter((p) => p.type === 'cms.GenericPage')
    const detailOf = async (id: number) => JSON.parse((await h!.origin_get(`/api/v1/cms/pages/${id}/`)).body)
    const da = await detailOf(a!.id)
    const db = await detailOf(b!.id)
    da.meta.parent.id = b!.id
    db.meta.parent.id = a!.id
    h.origin.setFault((ctx) => (ctx.kind === 'detail' && ctx.id === a!.id ? { type: 'json', status: 200, body: da } : ctx.kind === 'detail' && ctx.id === b!.id ? { type: 'json', status: 200, body: db } : undefined))
    const result = await h.app.shield.sync.syncNow({ full: true })
    expect(!result.ok && result.error.message).toMatch(/form a cycle/)
  })

  it('refuses a page that changed between its listing and its detail', async () => {
    h = await startShield()
    const page = h.origin.pages().find((p) => p.type === 'cms.GenericPage')!
    h.origin.onRequest((ctx) => {
      if (ctx.kind === 'detail' && ctx.id === page.id) h!.origin.updatePage(page.id, { title: 'Renamed mid-sync' })
    })
    const result = await h.app.shield.sync.syncNow({ full: true })
    expect(!result.ok && result.error.message).toMatch(new RegExp(`page ${page.id} changed between its listing and its detail`))
    expect(await titleServed(h, `/api/v1/cms/pages/${page.id}/`)).toBe(page.title)
  })

  it('refuses a page that disappeared between the listing and its detail', async () => {
    h = await startShield()
    // The last page in tree order is a leaf whose detail is fetched last.
    const last = h.app.shield.sync.current!.pages.at(-1)!
    h.origin.onRequest((ctx) => {
      if (ctx.kind === 'detail' && ctx.id !== last.id && h!.origin.pages().some((p) => p.id === last.id)) h!.origin.removePage(last.id)
    })
    const result = await h.app.shield.sync.syncNow({ full: true })
    expect(!result.ok && result.error.message).toBe(`page ${last.id} disappeared during the sync`)
    expect((await h.get(`/api/v1/cms/pages/${last.id}/`)).status).toBe(200)
  })
})

describe('changes and readiness', () => {
  it('publishes creates, moves and deletes with the next sync, and removes pages that are gone', async () => {
    h = await startShield()
    const pages = h.origin.pages()
    const landing = pages.filter((p) => p.type === 'cms.LandingPage')
    const moved = pages.find((p) => p.parentId === landing[0]!.id)!
    const removed = pages.find((p) => p.type === 'cms.GenericPage' && pages.every((q) => q.parentId !== p.id) && p.id !== moved.id)!
    h.origin.movePage(moved.id, landing[1]!.id)
    h.origin.removePage(removed.id)
    h.origin.addPage({ ...removed, id: 990_002, slug: 'created', title: 'Created', parentId: landing[0]!.id })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })

    const children = (id: number) => h!.get(`/api/v1/cms/pages/?child_of=${id}&limit=250`).then((r) => JSON.parse(r.body).items.map((i: { id: number }) => i.id))
    expect(await children(landing[1]!.id)).toContain(moved.id)
    expect(await children(landing[0]!.id)).not.toContain(moved.id)
    expect(await children(landing[0]!.id)).toContain(990_002)
    expect((await h.get(`/api/v1/cms/pages/${removed.id}/`)).status).toBe(404)
    expect(JSON.parse((await h.get(`/api/v1/cms/pages/${moved.id}/`)).body).meta.parent.id).toBe(landing[1]!.id)
  })

  it('keeps the same snapshot (and version) when nothing changed', async () => {
    h = await startShield()
    const version = h.app.shield.sync.current!.version
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: false })
    expect(h.app.shield.sync.current!.version).toBe(version)
  })

  it('is not ready and answers 503 before the first snapshot, then serves once the CMS is back', async () => {
    h = await startShield({ synced: false })
    h.origin.setFault(() => ({ type: 'reset' }))
    expect((await h.app.shield.sync.syncNow()).ok).toBe(false)
    const notReady = await h.get('/readyz')
    expect(notReady.status).toBe(503)
    expect(JSON.parse(notReady.body)).toMatchObject({ ready: false, snapshot: null })
    expect((await h.get('/healthz')).status).toBe(200)
    const api = await h.get('/api/v1/cms/pages/')
    expect(api.status).toBe(503)
    expect(api.headers['retry-after']).toBe('1')
    expect(JSON.parse(api.body)).toEqual({ message: 'cms-shield has not loaded the page tree yet' })

    h.origin.setFault(undefined)
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    const ready = await h.get('/readyz')
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body)).toMatchObject({ ready: true, snapshot: { pages: 89 } })
    expect((await h.get('/api/v1/cms/pages/')).status).toBe(200)
  })

  it('walks the listing at the CMS\'s largest page size, then every detail once', async () => {
    h = await startShield({ origin: { limitMax: 30 }, synced: false })
    await h.app.shield.sync.syncNow()
    const listings = h.origin.requests.filter((r) => r.kind === 'list' && /^\/api\/v1\/cms\/pages\/\?fields=show_in_menus,seo_title,search_description,locale&offset=\d+&limit=30$/.test(r.url))
    expect(listings.map((r) => new URL(r.url, 'http://x').searchParams.get('offset'))).toEqual(['0', '30', '60'])
    expect(h.origin.hits.detail).toBe(89)
    // Reads afterwards cost nothing, and the CMS's maximum applies to clients too.
    h.origin.resetHits()
    const tooMany = await h.get('/api/v1/cms/pages/?limit=31')
    expect(JSON.parse(tooMany.body)).toEqual({ message: 'limit cannot be higher than 30' })
    expect(h.origin.hits.total).toBe(0)
  })

  it('uses one request for the whole listing when the CMS has no maximum', async () => {
    h = await startShield({ origin: { limitMax: null }, synced: false })
    await h.app.shield.sync.syncNow()
    const listings = h.origin.requests.filter((r) => r.kind === 'list' && /^\/api\/v1\/cms\/pages\/\?fields=[a-z_,]+&offset=0&limit=/.test(r.url))
    expect(listings).toHaveLength(1)
    expect(JSON.parse((await h.get('/api/v1/cms/pages/?limit=89')).body).items).toHaveLength(89)
  })

  it('behaves like the CMS version it fronts: Wagtail 7.0 drops find\'s query string', async () => {
    h = await startShield({ origin: { version: '7.0' } })
    const response = await h.get('/api/v1/cms/pages/find/?id=2&fields=_,id')
    expect(response.headers['location']).toBe('https://shield.example/api/v1/cms/pages/2/')
  })

  it('answers an order by an API field that is no database column with 7.1+\'s 400 where Wagtail 7.0 fails with a 500', async () => {
    h = await startShield({ origin: { version: '7.0' } })
    for (const [query, field] of [['order=type', 'type'], ['order=-html_url,id&type=cms.GenericPage', '-html_url']] as const) {
      const cms = await h.origin_get(`/api/v1/cms/pages/?${query}`)
      expect(cms.status, query).toBe(500)
      const shield = await h.get(`/api/v1/cms/pages/?${query}`)
      expect(shield.status, query).toBe(400)
      expect(JSON.parse(shield.body)).toEqual({ message: `cannot order by '${field}' (unknown field)` })
    }
  })

  it("answers DRF's 406 in the CMS's own language, learned from the CMS, for every view and OPTIONS, asking it nothing", async () => {
    h = await startShield({ origin: { language: 'de' } })
    const id = h.origin.pages()[2]!.id
    for (const [method, url] of [
      ['GET', '/api/v1/cms/pages/?limit=1'], ['GET', `/api/v1/cms/pages/${id}/`], ['GET', '/api/v1/cms/pages/find/?id=2'],
      ['OPTIONS', '/api/v1/cms/pages/'], ['GET', '/api/v1/cms/pages/?format=json&search=x'],
    ] as const) {
      const compared = await expectSameAsCms(h, url, { method, headers: { accept: 'application/xml' } })
      expect(compared.status, url).toBe(406)
      expect(compared.cmsHits, url).toBe(0)
    }
    const body = JSON.parse((await h.get('/api/v1/cms/pages/', { accept: 'text/plain' })).body) as { detail: string }
    expect(body.detail).toBe('Kann die Accept Kopfzeile der Anfrage nicht erfüllen.')
  })

  for (const version of ['4.1', '7.4'] as const) {
    it(`sends Wagtail ${version} no page id its database cannot take, answering what the query means instead of a 5xx`, async () => {
      h = await startShield({ origin: { version } })
      const page = h.origin.pages()[3]!
      const huge = '99999999999999999999'
      for (const [url, same] of [
        [`/api/v1/cms/pages/?id=${huge}&order=id`, '/api/v1/cms/pages/?id=0&order=id'],
        [`/api/v1/cms/pages/?id=-${huge}&fields=title`, '/api/v1/cms/pages/?id=0&fields=title'],
        [`/api/v1/cms/pages/?alias_of=${huge}&order=-id`, '/api/v1/cms/pages/?alias_of=0&order=-id'],
        [`/api/v1/cms/pages/?translation_of=${huge}`, '/api/v1/cms/pages/?translation_of=0'],
        [`/api/v1/cms/pages/?translation_of=-${huge}`, '/api/v1/cms/pages/?translation_of=-1'],
        [`/api/v1/cms/pages/${page.id}/?id=${huge}&order=title&fields=title`, `/api/v1/cms/pages/${page.id}/?id=0&order=title&fields=title`],
        [`/api/v1/cms/pages/find/?html_path=/no/such/page/&id=${huge}`, '/api/v1/cms/pages/find/?html_path=/no/such/page/&id=0'],
        [`/api/v1/cms/pages/${huge}/?translation_of=${page.id}`, `/api/v1/cms/pages/0/?translation_of=${page.id}`],
        // An offset past 64 bits goes as 2^63−1: the earlier check fails first, or the page is empty.
        [`/api/v1/cms/pages/?translation_of=99999&offset=${huge}`, '/api/v1/cms/pages/?translation_of=99999&offset=9223372036854775807'],
        [`/api/v1/cms/pages/?type=cms.Nope&offset=${huge}&limit=5`, '/api/v1/cms/pages/?type=cms.Nope&offset=9223372036854775807&limit=5'],
        [`/api/v1/cms/pages/?order=-title&offset=${huge}`, '/api/v1/cms/pages/?order=-title&offset=9223372036854775807'],
      ] as const) {
        const shield = await h.get(url)
        const cms = await h.origin_get(same)
        expect(shield.status, url).toBe(cms.status)
        expect(shield.status, url).toBeLessThan(500)
        expect(shield.body, url).toBe(cms.body.replaceAll('http://localhost/api/v1/cms/', 'https://shield.example/api/v1/cms/'))
      }
    })
  }

  for (const [version, status] of [['4.1', 200], ['7.4', 400]] as const) {
    it(`answers a NUL in a text filter as Wagtail ${version} does (${status}), learned from the CMS, asking it nothing`, async () => {
      h = await startShield({ origin: { version } })
      const page = h.origin.pages()[3]!
      for (const url of [
        '/api/v1/cms/pages/?title=a%00',
        '/api/v1/cms/pages/?slug=x%00y&child_of=root',
        '/api/v1/cms/pages/?seo_title=%00&limit=1',
        `/api/v1/cms/pages/${page.id}/?title=${encodeURIComponent(page.title)}%00`,
      ]) {
        const compared = await expectSameAsCms(h, url)
        expect(compared.status, url).toBe(url.includes(`/${page.id}/`) && status === 200 ? 404 : status)
        expect(compared.cmsHits, url).toBe(0)
      }
    })
  }
})
