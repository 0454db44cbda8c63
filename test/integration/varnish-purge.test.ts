/**
 * A real Varnish with the shipped VCL (config/varnish/default.vcl) in front of the real app on a
 * real port, over the fake CMS: what Varnish caches, what a purge by surrogate key drops (and only
 * that), who may purge, and, with cms-shield purging it (CDN_PURGE_VARNISH), that every editor
 * action shows through Varnish within 2 s while unrelated answers stay cached for the hour
 * CDN_MAX_AGE gives them. Whether Varnish answered from its cache is read from the `X-Cache` header
 * the VCL adds (HIT when the object had been served before).
 *
 * Skipped, with the reason printed, only where varnishd is missing outside CI.
 */
import { request } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../helpers/eventually.js'
import { freePort } from '../helpers/free-port.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { startVarnish, varnishMissing, type VarnishServer } from '../helpers/varnish-server.js'

const missing = varnishMissing()
if (missing !== undefined) console.warn(`skipping the Varnish suites: ${missing}`)

interface Answer {
  readonly status: number
  readonly body: string
  readonly cache: string | undefined
  readonly headers: Record<string, string | string[] | undefined>
}

async function get(base: string, path: string): Promise<Answer> {
  const response = await request(base + path)
  const body = await response.body.text()
  const cache = response.headers['x-cache']
  return { status: response.statusCode, body, cache: typeof cache === 'string' ? cache : undefined, headers: response.headers }
}

async function purge(varnish: VarnishServer, headers: Record<string, string>): Promise<{ status: number; purged: number; body: string }> {
  const response = await request(`${varnish.url}/`, { method: 'PURGE', headers })
  return { status: response.statusCode, purged: Number(response.headers['x-purged'] ?? NaN), body: await response.body.text() }
}

/** Polls (bounded) until `check` holds. */

/** The app on a real port of 127.0.0.1 (Varnish talks HTTP to it) and its base URL. */
async function listen(harness: Harness, port = 0): Promise<{ host: string; port: number; url: string }> {
  await harness.app.listen({ port, host: '127.0.0.1' })
  const address = harness.app.server.address() as { port: number }
  return { host: '127.0.0.1', port: address.port, url: `http://127.0.0.1:${address.port}` }
}

function leafId(harness: Harness): number {
  const snapshot = harness.app.shield.sync.current!
  return snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!.id
}

describe.skipIf(missing !== undefined)('the shipped VCL in front of cms-shield', () => {
  let h: Harness
  let shield: { host: string; port: number; url: string }
  let varnish: VarnishServer

  beforeAll(async () => {
    // Browsers' max-age is Varnish's TTL when no s-maxage is sent: an hour, so nothing expires here.
    h = await startShield({ env: { CLIENT_MAX_AGE: '1h' } })
    shield = await listen(h)
    varnish = await startVarnish({ backend: shield })
  })
  afterAll(async () => {
    await varnish?.stop()
    await h?.close()
  })

  it('caches the pages API with cms-shield\'s bytes and headers, and answers a repeat itself', async () => {
    const id = leafId(h)
    const direct = await get(shield.url, `/api/v1/cms/pages/${id}/`)
    const first = await get(varnish.url, `/api/v1/cms/pages/${id}/`)
    const hits = varnish.counters()['MAIN.cache_hit']!
    const second = await get(varnish.url, `/api/v1/cms/pages/${id}/`)
    expect([first.cache, second.cache]).toEqual(['MISS', 'HIT'])
    await eventually(async () => varnish.counters()['MAIN.cache_hit'] === hits + 1, 'the hit counted by varnishstat', 2000)
    expect(second.body).toBe(direct.body)
    for (const name of ['etag', 'cache-control', 'vary', 'surrogate-key', 'cache-tag', 'content-type']) {
      expect(second.headers[name], name).toBe(direct.headers[name])
    }
    expect(second.headers.xkey).toBeUndefined()
    const revalidated = await request(`${varnish.url}/api/v1/cms/pages/${id}/`, { headers: { 'if-none-match': String(direct.headers.etag) } })
    await revalidated.body.dump()
    expect(revalidated.statusCode).toBe(304)
  })

  it('drops exactly the answers tagged with a purged key', async () => {
    const id = leafId(h)
    const parent = h.app.shield.sync.current!.byId.get(id)!.parentId!
    const tagged = [`/api/v1/cms/pages/${id}/`, `/api/v1/cms/pages/?child_of=${parent}`]
    const untagged = ['/api/v1/cms/pages/?limit=5', '/api/v1/cms/pages/?show_in_menus=true', `/api/v1/cms/pages/${parent}/`]
    for (const path of [...tagged, ...untagged]) await get(varnish.url, path)
    const purged = await purge(varnish, { 'xkey-purge': `cms-page-${id} cms-children-${parent} cms-page-no-such` })
    expect(purged).toMatchObject({ status: 200, purged: 2 })
    for (const path of tagged) expect((await get(varnish.url, path)).cache, path).toBe('MISS')
    for (const path of untagged) expect((await get(varnish.url, path)).cache, path).toBe('HIT')
  })

  it('serves a soft-purged answer once more while it fetches the new one', async () => {
    const id = leafId(h)
    const path = `/api/v1/cms/pages/${id}/`
    const before = await get(varnish.url, path)
    h.origin.updatePage(id, { title: 'Soft-purged title' })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true })
    const fresh = await get(shield.url, path)
    expect(fresh.body).toContain('Soft-purged title')
    expect((await get(varnish.url, path)).body).toBe(before.body)
    expect(await purge(varnish, { 'xkey-softpurge': `cms-page-${id}` })).toMatchObject({ status: 200, purged: 1 })
    // In grace (cms-shield's stale-while-revalidate): the old bytes at once, the fetch behind them.
    const stale = await get(varnish.url, path)
    expect(stale).toMatchObject({ cache: 'HIT', body: before.body })
    await eventually(async () => (await get(varnish.url, path)).body === fresh.body, 'the soft-purged answer refreshed', 2000)
  })

  it('answers requests carrying the site\'s cookies from the cache, and passes those with Authorization', async () => {
    const path = `/api/v1/cms/pages/?child_of=${h.app.shield.sync.current!.rootId}`
    await get(varnish.url, path)
    const withCookie = await request(varnish.url + path, { headers: { cookie: 'sessionid=abc; csrftoken=def' } })
    await withCookie.body.dump()
    expect(withCookie.headers['x-cache']).toBe('HIT')
    const withAuthorization = await request(varnish.url + path, { headers: { authorization: 'Bearer someone' } })
    await withAuthorization.body.dump()
    expect(withAuthorization.headers['x-cache']).toBe('MISS')
  })

  it('refuses a PURGE without keys with 400 and passes OPTIONS to cms-shield', async () => {
    const refused = await purge(varnish, {})
    expect(refused.status).toBe(400)
    const options = await request(`${varnish.url}/api/v1/cms/pages/`, { method: 'OPTIONS' })
    const direct = await request(`${shield.url}/api/v1/cms/pages/`, { method: 'OPTIONS' })
    expect(options.statusCode).toBe(direct.statusCode)
    expect(await options.body.text()).toBe(await direct.body.text())
    expect(options.headers.allow).toBe(direct.headers.allow)
  })
})

describe.skipIf(missing !== undefined)('the purgers ACL', () => {
  let h: Harness | undefined
  let varnish: VarnishServer | undefined
  afterEach(async () => {
    await varnish?.stop()
    await h?.close()
  })

  it('answers 403 to a PURGE from outside it and keeps every answer', async () => {
    h = await startShield()
    const shield = await listen(h)
    // The shipped ACL with loopback taken out: the test's requests come from outside it.
    varnish = await startVarnish({ backend: shield, editVcl: (vcl) => vcl.replace(/^\s*"(127\.0\.0\.1|::1)";\n/gm, '') })
    const path = `/api/v1/cms/pages/${leafId(h)}/`
    await get(varnish.url, path)
    const refused = await purge(varnish, { 'xkey-purge': 'cms-pages' })
    expect(refused.status).toBe(403)
    expect((await get(varnish.url, path)).cache).toBe('HIT')
  })
})

/** What a client sees of an answer: enough to tell two versions apart. */
const seen = (answer: Answer) => ({ status: answer.status, location: answer.headers.location, body: answer.body })

describe.skipIf(missing !== undefined)('editor actions through Varnish, purged by cms-shield', () => {
  const TOKEN = 'webhook-token-0123456789'
  let h: Harness
  let shield: { host: string; port: number; url: string }
  let varnish: VarnishServer

  beforeAll(async () => {
    // Varnish first, its backend port chosen ahead: the first sync's purge (of everything) then
    // reaches it at once instead of being retried into the middle of a test.
    const shieldPort = await freePort()
    varnish = await startVarnish({ backend: { host: '127.0.0.1', port: shieldPort } })
    h = await startShield({
      // max-age=0 for browsers: whatever Varnish keeps, it keeps for s-maxage.
      env: { CDN_PURGE_VARNISH: varnish.url, CDN_MAX_AGE: '1h', CLIENT_MAX_AGE: '0s', REFRESH_TOKEN: TOKEN, REFRESH_DEBOUNCE: '20ms' },
      deps: { autoSync: true },
    })
    shield = await listen(h, shieldPort)
    await h.app.shield.cdn.idle()
    // This Varnish began probing its backend (the shipped VCL's `/readyz` probe) before cms-shield
    // listened, so its first fetches may still fail: the tests start once one gets through.
    await eventually(async () => (await get(varnish.url, '/readyz')).status === 200, 'Varnish reaching cms-shield')
  })
  afterAll(async () => {
    await h?.close()
    await varnish?.stop()
  })

  const snapshot = () => h.app.shield.sync.current!
  const children = (id: number) => (snapshot().childrenOf.get(id) ?? []).map((page) => page.id)
  const parentOf = (id: number) => snapshot().byId.get(id)!.parentId!
  /** The site's sections (children of the root) that have pages two levels down. */
  const sections = () => children(snapshot().rootId).filter((id) => children(id).some((child) => children(child).length > 0))
  /** The section no action touches: its answers must stay cached throughout. */
  const untouched = () => sections().at(-1)!
  /** A section for the nth action, never the untouched one. */
  const section = (n: number) => sections()[n % (sections().length - 1)]!
  const leafIn = (sectionId: number) => children(sectionId).find((id) => children(id).length === 0 && snapshot().byId.get(id)!.type === 'cms.GenericPage')!
  const parentIn = (sectionId: number) => children(sectionId).find((id) => children(id).length > 0)!

  const detail = (id: number) => `/api/v1/cms/pages/${id}/`
  const childrenList = (id: number) => `/api/v1/cms/pages/?child_of=${id}`
  const descendantsList = (id: number) => `/api/v1/cms/pages/?descendant_of=${id}`
  const ancestorsList = (id: number) => `/api/v1/cms/pages/?ancestor_of=${id}`
  const MENU = '/api/v1/cms/pages/?show_in_menus=true'
  const sectionMenu = (id: number) => `/api/v1/cms/pages/?child_of=${id}&show_in_menus=true`
  const typedList = (id: number) => `/api/v1/cms/pages/?descendant_of=${id}&type=cms.GenericPage&fields=title,show_in_menus`
  async function findUrl(id: number): Promise<string> {
    const htmlUrl = (JSON.parse((await get(shield.url, detail(id))).body) as { meta: { html_url: string } }).meta.html_url
    return `/api/v1/cms/pages/find/?html_path=${encodeURIComponent(new URL(htmlUrl).pathname)}`
  }
  /**
   * The answers around a page an editor touches: its own, its parent's and siblings', its
   * section's lists (whole, in menus, of one type with `?fields=`), its chain, and a 404.
   */
  async function around(id: number): Promise<string[]> {
    const parent = parentOf(id)
    const siblings = children(parent).filter((sibling) => sibling !== id).slice(0, 2)
    return [
      detail(id), childrenList(parent), MENU, descendantsList(sectionOf(id)), await findUrl(id), ancestorsList(id),
      detail(parent), childrenList(id), sectionMenu(sectionOf(id)), typedList(sectionOf(id)), detail(ABSENT),
      ...siblings.map(detail), ...(siblings.length > 0 ? [ancestorsList(siblings[0]!)] : []),
    ]
  }
  /** An id no page has: its 404 is cached, carrying the key only its creation purges. */
  const ABSENT = 990_999
  function sectionOf(id: number): number {
    let current = id
    while (parentOf(current) !== snapshot().rootId) current = parentOf(current)
    return current
  }
  /** Answers from the untouched section, several kinds. */
  function unrelated(): string[] {
    const other = untouched()
    const deep = parentIn(other)
    return [detail(other), childrenList(other), descendantsList(other), detail(deep), childrenList(deep), detail(children(deep)[0]!)]
  }

  async function webhook(ids: number[]): Promise<void> {
    const response = await h.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${TOKEN}` }, payload: { ids } })
    expect(response.statusCode).toBe(202)
  }
  async function purgeShield(id: number): Promise<void> {
    expect((await h.app.inject({ method: 'PURGE', url: detail(id) })).statusCode).toBe(200)
  }
  async function scheduledSync(): Promise<void> {
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true })
  }

  /**
   * Warms Varnish with `urls` and the unrelated answers (each then a hit), runs the editor action
   * (the change in the CMS and what makes cms-shield sync it), then, once cms-shield serves the
   * new snapshot, polls through Varnish until every answer whose bytes changed equals
   * cms-shield's own again (bounded: 2 s), and checks that every answer whose bytes did not
   * change, near the edit or far from it, is still a Varnish hit: purged exactly.
   */
  async function editorAction(urls: string[], mustChange: string[], act: () => Promise<void>): Promise<void> {
    const others = unrelated()
    const all = [...new Set([...urls, ...others])]
    // The purges of whatever happened before have reached Varnish.
    await h.app.shield.cdn.idle()
    for (const url of all) await get(varnish.url, url)
    for (const url of all) expect((await get(varnish.url, url)).cache, `${url} cached before the action`).toBe('HIT')
    const before = new Map(await Promise.all(all.map(async (url) => [url, seen(await get(shield.url, url))] as const)))
    const fingerprint = snapshot().fingerprint
    await act()
    await eventually(async () => snapshot().fingerprint !== fingerprint, 'cms-shield serving the change', 2000)
    const after = new Map(await Promise.all(all.map(async (url) => [url, seen(await get(shield.url, url))] as const)))
    const changed = all.filter((url) => JSON.stringify(after.get(url)) !== JSON.stringify(before.get(url)))
    expect(changed).toEqual(expect.arrayContaining(mustChange))
    const stale = async () => {
      const answers = await Promise.all(changed.map(async (url) => [url, seen(await get(varnish.url, url))] as const))
      return answers.filter(([url, answer]) => JSON.stringify(answer) !== JSON.stringify(after.get(url))).map(([url]) => url)
    }
    await eventually(async () => (await stale()).length === 0, 'every changed answer through Varnish', 2000)
    for (const url of others) expect(after.get(url), `${url} is unrelated`).toEqual(before.get(url))
    const kept = all.filter((url) => !changed.includes(url))
    await h.app.shield.cdn.idle()
    const purgedNeedlessly = []
    for (const url of kept) if ((await get(varnish.url, url)).cache !== 'HIT') purgedNeedlessly.push(url)
    expect(purgedNeedlessly.join(' '), 'answers purged although their bytes did not change').toBe('')
  }

  it('keeps answers for CDN_MAX_AGE (s-maxage), not the browsers\' max-age', async () => {
    const path = detail(leafIn(untouched()))
    const first = await get(varnish.url, path)
    expect(first.headers['cache-control']).toMatch(/(^|, )max-age=0(,|$)/)
    expect(first.headers['cache-control']).toMatch(/(^|, )s-maxage=3600(,|$)/)
    expect((await get(varnish.url, path)).cache).toBe('HIT')
  })

  it('retitle: the page, its parent\'s and section\'s lists and its children\'s meta.parent', async () => {
    const page = parentIn(section(0))
    const child = children(page)[0]!
    await editorAction([...(await around(page)), detail(child)], [detail(page), childrenList(parentOf(page)), detail(child)], async () => {
      h.origin.updatePage(page, { title: 'Retitled by an editor' })
      await webhook([page])
    })
  })

  it('body-only edit announced by a PURGE to cms-shield: the detail alone', async () => {
    const page = leafIn(section(1))
    const extra = h.origin.pages().find((p) => p.id === page)!.extra
    await editorAction(await around(page), [detail(page)], async () => {
      h.origin.updatePage(page, { extra: { ...extra, body: '<p>edited body</p>' } })
      await purgeShield(page)
    })
  })

  it('re-flag (show_in_menus): the page and the menu list', async () => {
    const page = leafIn(section(2))
    const flag = h.origin.pages().find((p) => p.id === page)!.showInMenus
    await editorAction(await around(page), [detail(page), MENU], async () => {
      h.origin.updatePage(page, { showInMenus: !flag })
      await scheduledSync()
    })
  })

  it('move: the page, its old and new parents\' lists, its find/ path', async () => {
    const page = leafIn(section(3))
    const from = parentOf(page)
    const to = parentIn(section(4))
    const urls = [...(await around(page)), childrenList(to), descendantsList(section(4))]
    await editorAction(urls, [detail(page), childrenList(from), childrenList(to), descendantsList(section(4)), await findUrl(page)], async () => {
      h.origin.movePage(page, to)
      await scheduledSync()
    })
  })

  it('slug change: the page\'s and its subtree\'s addresses, not its siblings', async () => {
    const page = parentIn(section(6))
    const child = children(page)[0]!
    await editorAction([...(await around(page)), detail(child), await findUrl(child), ancestorsList(child)], [detail(page), detail(child), await findUrl(child)], async () => {
      h.origin.updatePage(page, { slug: 'renamed-by-an-editor' })
      await scheduledSync()
    })
  })

  it('create: the new page\'s detail (a 404 before) and its parent\'s list', async () => {
    const parent = parentIn(section(5))
    const sibling = h.origin.pages().find((p) => p.id === children(parent)[0])!
    const id = 990_300
    await editorAction([detail(id), childrenList(parent), descendantsList(section(5)), MENU], [detail(id), childrenList(parent)], async () => {
      h.origin.addPage({ ...sibling, id, slug: 'created-by-an-editor', title: 'Created by an editor', parentId: parent })
      await scheduledSync()
    })
  })

  it('delete: the page\'s detail (a 404 now) and its parent\'s list', async () => {
    const page = leafIn(section(0))
    await editorAction(await around(page), [detail(page), childrenList(parentOf(page))], async () => {
      h.origin.removePage(page)
      await scheduledSync()
    })
  })

  it('unpublish: the page\'s detail and its parent\'s list, like a delete', async () => {
    const page = leafIn(section(1))
    await editorAction(await around(page), [detail(page), childrenList(parentOf(page))], async () => {
      h.origin.updatePage(page, { live: false })
      await webhook([page])
    })
  })

  it('publish: the page\'s detail (a 404 while a draft) and the lists it enters', async () => {
    const page = leafIn(section(2))
    const parent = parentOf(page)
    h.origin.updatePage(page, { live: false })
    await scheduledSync()
    await editorAction([detail(page), childrenList(parent), descendantsList(sectionOf(parent)), MENU, sectionMenu(sectionOf(parent)), detail(parent), ...children(parent).slice(0, 2).map(detail)], [detail(page), childrenList(parent)], async () => {
      h.origin.updatePage(page, { live: true })
      await webhook([page])
    })
  })
})
