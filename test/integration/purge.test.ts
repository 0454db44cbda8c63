/**
 * PURGE as Wagtail's frontend_cache sends it (docs/wagtail-compatibility.md#wire-format), and the refresh webhook, against the real
 * app and the fake CMS: answered at once, the change served soon after, the CMS asked only for the
 * named page (its item, its detail, its children's details) or, when more than its content changed,
 * the listing too; and nothing changes for callers that may not purge.
 */
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'

const TOKEN = 'webhook-token-0123456789'
let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

async function start(env: Record<string, string> = {}): Promise<Harness> {
  h = await startShield({ origin: { limitMax: 30 }, env: { REFRESH_TOKEN: TOKEN, REFRESH_DEBOUNCE: '20ms', ...env }, deps: { autoSync: true } })
  h.origin.resetHits()
  return h
}

/** Polls (bounded: 2 s) until `check` holds; the promise is "within a second or two". */
async function eventually(check: () => Promise<boolean>, ms = 2000): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return Date.now() - started
}

function leaf(harness: Harness) {
  const snapshot = harness.app.shield.sync.current!
  const record = snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!
  return harness.origin.pages().find((p) => p.id === record.id)!
}

const detailRequests = (harness: Harness) => harness.origin.requests.filter((r) => r.kind === 'detail').map((r) => r.url)
const listRequests = (harness: Harness) => harness.origin.requests.filter((r) => r.kind === 'list').map((r) => r.url)

describe('PURGE from Wagtail', () => {
  it('answers 200 at once and serves a body-only edit of the purged API detail URL within 2 s', async () => {
    const harness = await start()
    const page = leaf(harness)
    harness.origin.updatePage(page.id, { extra: { ...page.extra, body: '<p>purged edit</p>' } })
    const purge = await harness.app.inject({
      method: 'PURGE',
      url: `/api/v1/cms/pages/${page.id}/`,
      headers: { host: 'api.example.com:8443', 'user-agent': 'Wagtail-frontendcache/7.4.3', 'accept-encoding': 'identity', connection: 'close' },
    })
    expect(purge.statusCode).toBe(200)
    expect(purge.json()).toEqual({ status: 'ok', target: 'page', id: page.id })
    await eventually(async () => (await harness.get(`/api/v1/cms/pages/${page.id}/`)).body.includes('purged edit'))
    // The page's own listing item and its detail: no listing pass (3 pages of 30), nothing else.
    expect(harness.origin.hits).toMatchObject({ list: 1, detail: 1 })
    expect(listRequests(harness)).toEqual([expect.stringMatching(new RegExp(`[?&]id=${page.id}&`))])
    expect(detailRequests(harness)).toEqual([`/api/v1/cms/pages/${page.id}/`])
  })

  it('serves a purged page\'s new title in its parent\'s listing and in its children\'s meta.parent, without a listing pass', async () => {
    const harness = await start()
    const snapshot = harness.app.shield.sync.current!
    const parent = snapshot.pages.slice().find((p) => p.parentId !== null && (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 2)!
    const children = snapshot.childrenOf.get(parent.id)!.map((child) => child.id)
    harness.origin.updatePage(parent.id, { title: 'Renamed by an editor' })
    await harness.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${parent.id}/` })
    await eventually(async () => JSON.parse((await harness.get(`/api/v1/cms/pages/${children[0]}/`)).body).meta.parent.title === 'Renamed by an editor')
    const listing = JSON.parse((await harness.get(`/api/v1/cms/pages/?child_of=${parent.parentId}&id=${parent.id}`)).body)
    expect(listing.items.find((item: { id: number }) => item.id === parent.id).title).toBe('Renamed by an editor')
    for (const id of children) expect(JSON.parse((await harness.get(`/api/v1/cms/pages/${id}/`)).body).meta.parent.title).toBe('Renamed by an editor')
    expect(listRequests(harness)).toEqual([expect.stringMatching(new RegExp(`[?&]id=${parent.id}&`))])
    expect(detailRequests(harness).sort()).toEqual([parent.id, ...children].map((id) => `/api/v1/cms/pages/${id}/`).sort())
  })

  it('serves a purged RedirectPage\'s new title in its detail and in a listing of its type, without a listing pass', async () => {
    const harness = await start()
    const snapshot = harness.app.shield.sync.current!
    const redirect = snapshot.pages.slice().find((p) => p.typedListItem !== undefined && !snapshot.childrenOf.has(p.id))!
    expect(redirect.type).toBe('cms.RedirectPage')
    harness.origin.updatePage(redirect.id, { title: 'Partner, renamed' })
    await harness.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${redirect.id}/` })
    await eventually(async () => JSON.parse((await harness.get(`/api/v1/cms/pages/${redirect.id}/`)).body).title === 'Partner, renamed')
    const typed = JSON.parse((await harness.get(`/api/v1/cms/pages/?type=cms.RedirectPage&id=${redirect.id}`)).body)
    expect(typed.items).toEqual([expect.objectContaining({ id: redirect.id, title: 'Partner, renamed', meta: expect.objectContaining({ html_url: expect.stringMatching(/^https:\/\/partner\.example\.org\//) }) })])
    const generic = JSON.parse((await harness.get(`/api/v1/cms/pages/?id=${redirect.id}`)).body)
    expect(generic.items[0].title).toBe('Partner, renamed')
    expect(generic.items[0].meta.html_url).not.toMatch(/partner\.example\.org/)
    // Its own item, its detail and its item in a listing of its type: no listing pass.
    expect(listRequests(harness)).toEqual([expect.stringMatching(new RegExp(`[?&]id=${redirect.id}&`)), expect.stringMatching(new RegExp(`[?&]type=cms\\.RedirectPage&id=${redirect.id}&`))])
    expect(detailRequests(harness)).toEqual([`/api/v1/cms/pages/${redirect.id}/`])
  })

  it('serves the renamed parent in every child detail read before the edit, and the untouched pages as they were', async () => {
    const harness = await start()
    const snapshot = harness.app.shield.sync.current!
    const parent = snapshot.pages.slice().find((p) => p.parentId !== null && (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 2)!
    const children = snapshot.childrenOf.get(parent.id)!.map((child) => child.id)
    const untouched = snapshot.pages.slice().filter((p) => p.id !== parent.id && p.parentId !== parent.id).slice(0, 5).map((p) => p.id)
    // Read, and so remembered by URL, under the snapshot before the edit.
    const before = new Map<number, string>()
    for (const id of [parent.id, ...children, ...untouched]) before.set(id, (await harness.get(`/api/v1/cms/pages/${id}/`)).body)
    harness.origin.updatePage(parent.id, { title: 'Renamed again' })
    await harness.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${parent.id}/` })
    await eventually(async () => JSON.parse((await harness.get(`/api/v1/cms/pages/${parent.id}/`)).body).title === 'Renamed again')
    // A patch in place of the snapshot those reads were answered from.
    expect(harness.app.shield.sync.current!.patched?.from).toBe(snapshot.fingerprint)
    for (const id of children) expect(JSON.parse((await harness.get(`/api/v1/cms/pages/${id}/`)).body).meta.parent.title).toBe('Renamed again')
    for (const id of untouched) expect((await harness.get(`/api/v1/cms/pages/${id}/`)).body).toBe(before.get(id))
  })

  it('runs the listing pass when a purged page\'s slug changed, and serves its descendants\' new URLs', async () => {
    const harness = await start()
    const snapshot = harness.app.shield.sync.current!
    const parent = snapshot.pages.slice().find((p) => p.parentId !== null && (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 1)!
    const child = snapshot.childrenOf.get(parent.id)![0]!
    harness.origin.updatePage(parent.id, { slug: 'renamed-section' })
    await harness.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${parent.id}/` })
    await eventually(async () => JSON.parse((await harness.get(`/api/v1/cms/pages/${child.id}/`)).body).meta.html_url.includes('/renamed-section/'))
    // The page's item showed the new slug; the pass (3 windows) then found everything it moved.
    expect(listRequests(harness)).toHaveLength(4)
    expect(listRequests(harness)[0]).toMatch(new RegExp(`[?&]id=${parent.id}&`))
  })

  it('maps a page URL and its Host to the page', async () => {
    const harness = await start()
    const page = leaf(harness)
    const htmlUrl = new URL(JSON.parse((await harness.get(`/api/v1/cms/pages/${page.id}/`)).body).meta.html_url)
    harness.origin.updatePage(page.id, { extra: { ...page.extra, body: '<p>edited via page URL</p>' } })
    const purge = await harness.app.inject({ method: 'PURGE', url: htmlUrl.pathname, headers: { host: htmlUrl.host } })
    expect(purge.json()).toEqual({ status: 'ok', target: 'page', id: page.id })
    await eventually(async () => (await harness.get(`/api/v1/cms/pages/${page.id}/`)).body.includes('edited via page URL'))
  })

  it('runs a listing pass for a path it does not know, which shows a new page', async () => {
    const harness = await start()
    const page = leaf(harness)
    harness.origin.addPage({ ...page, id: 990_100, slug: 'fresh', title: 'Fresh page' })
    const purge = await harness.app.inject({ method: 'PURGE', url: '/somewhere/else/', headers: { host: 'localhost' } })
    expect(purge.json()).toEqual({ status: 'ok', target: 'unknown' })
    await eventually(async () => (await harness.get('/api/v1/cms/pages/990100/')).status === 200)
    // The new page, and the page after it, whose predecessor in tree order changed: the walk
    // derives URLs from parents and reads its parent again (docs/architecture.md#decisions).
    const after = harness.app.shield.sync.current!.pages.at(harness.app.shield.sync.current!.byId.get(990_100)!.order + 1)
    expect(detailRequests(harness)).toEqual(['/api/v1/cms/pages/990100/', ...(after ? [`/api/v1/cms/pages/${after.id}/`] : [])])
  })

  it('coalesces a burst of PURGEs into one sync', async () => {
    const harness = await start({ REFRESH_DEBOUNCE: '200ms' })
    const pages = harness.app.shield.sync.current!.pages.slice(1, 6)
    const before = harness.app.shield.sync.status.lastAttemptAt
    await Promise.all(pages.map((p) => harness.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${p.id}/` })))
    await eventually(async () => harness.app.shield.sync.status.lastAttemptAt !== before && !harness.app.shield.sync.status.running)
    // Each page's own item and detail, in one sync: no listing pass.
    expect(harness.origin.hits).toMatchObject({ list: 5, detail: 5 })
  })

  it('refuses a PURGE from an address outside PURGE_ALLOW without the token, and changes nothing', async () => {
    const harness = await start({ PURGE_ALLOW: '10.0.0.0/8', PURGE_TOKEN: 'purge-token-0123456789' })
    await harness.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = harness.app.server.address() as { port: number }
    const page = leaf(harness)
    const refused = await request(`http://127.0.0.1:${port}/api/v1/cms/pages/${page.id}/`, { method: 'PURGE' })
    expect(refused.statusCode).toBe(403)
    await refused.body.dump()
    const wrongToken = await request(`http://127.0.0.1:${port}/api/v1/cms/pages/${page.id}/`, { method: 'PURGE', headers: { 'x-purge-token': 'purge-token-wrong-000000' } })
    expect(wrongToken.statusCode).toBe(403)
    await wrongToken.body.dump()
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(harness.origin.hits.total).toBe(0)
    const allowed = await request(`http://127.0.0.1:${port}/api/v1/cms/pages/${page.id}/`, { method: 'PURGE', headers: { 'x-purge-token': 'purge-token-0123456789' } })
    expect(allowed.statusCode).toBe(200)
    await allowed.body.dump()
    await eventually(async () => harness.origin.hits.detail === 1)
  })
})

describe('the refresh webhook', () => {
  it('takes ids with the bearer token (202) and serves the change', async () => {
    const harness = await start()
    const page = leaf(harness)
    harness.origin.updatePage(page.id, { extra: { ...page.extra, body: '<p>webhook edit</p>' } })
    const response = await harness.app.inject({
      method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: { ids: [page.id] },
    })
    expect(response.statusCode).toBe(202)
    expect(response.json()).toEqual({ status: 'accepted', ids: [page.id] })
    await eventually(async () => (await harness.get(`/api/v1/cms/pages/${page.id}/`)).body.includes('webhook edit'))
    expect(detailRequests(harness)).toEqual([`/api/v1/cms/pages/${page.id}/`])
  })

  it('re-reads everything on {"all": true}', async () => {
    const harness = await start()
    const response = await harness.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${TOKEN}` }, payload: { all: true } })
    expect(response.statusCode).toBe(202)
    await eventually(async () => harness.origin.hits.detail === 89 && !harness.app.shield.sync.status.running)
  })

  it('refuses a wrong token with 401 and a bad body with 400, and changes nothing', async () => {
    const harness = await start()
    const wrong = await harness.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: 'Bearer nope' }, payload: { all: true } })
    expect(wrong.statusCode).toBe(401)
    expect(wrong.headers['www-authenticate']).toMatch(/^Bearer/)
    const missing = await harness.app.inject({ method: 'POST', url: '/-/refresh', payload: { all: true } })
    expect(missing.statusCode).toBe(401)
    const bad = await harness.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"ids": ["x"]}' })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toMatch(/ids/)
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(harness.origin.hits.total).toBe(0)
  })

  it('does not exist without REFRESH_TOKEN', async () => {
    h = await startShield({ env: { REFRESH_TOKEN: '' } })
    const response = await h.app.inject({ method: 'POST', url: '/-/refresh', payload: { all: true } })
    expect(response.statusCode).toBe(404)
  })
})
