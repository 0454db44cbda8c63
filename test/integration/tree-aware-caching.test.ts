/**
 * Tree-aware invalidation: a change invalidates exactly what depends on the changed pages. Cached
 * lists and CMS answers are keyed by the digest of the pages they cover, so an edit elsewhere in
 * the tree keeps them (same ETag, no CMS request), and an edit inside keeps nothing stale. Every
 * answer carries `Surrogate-Key`/`Cache-Tag` keys derived from the tree for a CDN in front.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** Two sections of the site (children of the root), each with at least two children. */
function twoSections(harness: Harness): [number, number] {
  const snapshot = harness.app.shield.sync.current!
  const sections = snapshot.childrenOf.get(snapshot.rootId)!.filter((p) => (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 2)
  return [sections[0]!.id, sections[1]!.id]
}

function childOf(harness: Harness, parent: number) {
  const id = harness.app.shield.sync.current!.childrenOf.get(parent)![0]!.id
  return harness.origin.pages().find((p) => p.id === id)!
}

describe('Surrogate-Key and Cache-Tag', () => {
  it('tag a detail with its inputs, a list with its scope and items, a read-through answer with cms-read, every answer with cms-pages', async () => {
    h = await startShield()
    const [section] = twoSections(h)
    const child = childOf(h, section)
    const root = h.app.shield.sync.current!.rootId
    const detail = await h.get(`/api/v1/cms/pages/${child.id}/`)
    expect(detail.headers['surrogate-key']).toBe(`cms-pages cms-page-${child.id} cms-summary-${section} cms-path-${child.id} cms-path-${section} cms-path-${root}`)
    // Cache-Tag carries the same keys and is off by default (CACHE_TAG_HEADERS).
    expect(detail.headers['cache-tag']).toBeUndefined()
    const list = await h.get(`/api/v1/cms/pages/?child_of=${section}`)
    expect(String(list.headers['surrogate-key']).split(' ')).toEqual(expect.arrayContaining(['cms-pages', `cms-children-${section}`, `cms-item-${child.id}`]))
    expect(String((await h.get('/api/v1/cms/pages/')).headers['surrogate-key']).split(' ').slice(0, 2)).toEqual(['cms-pages', 'cms-list'])
    // A read-through answer may depend on anything: every change purges it.
    const searched = await h.get(`/api/v1/cms/pages/?child_of=${section}&search=a`)
    expect(searched.headers['surrogate-key']).toBe('cms-pages cms-read')
  })

  it('are sent as Cache-Tag, alone or beside Surrogate-Key, as CACHE_TAG_HEADERS names them', async () => {
    for (const [setting, names] of [['cache-tag', ['cache-tag']], ['surrogate-key,cache-tag', ['surrogate-key', 'cache-tag']]] as const) {
      await h?.close()
      h = await startShield({ env: { CACHE_TAG_HEADERS: setting } })
      const [section] = twoSections(h)
      const child = childOf(h, section)
      const keys = [`cms-pages`, `cms-page-${child.id}`, `cms-summary-${section}`, `cms-path-${child.id}`, `cms-path-${section}`, `cms-path-${h.app.shield.sync.current!.rootId}`]
      const detail = await h.get(`/api/v1/cms/pages/${child.id}/`)
      expect(detail.headers['cache-tag']).toBe(keys.join(','))
      expect(detail.headers['surrogate-key']).toBe(names.length === 2 ? keys.join(' ') : undefined)
    }
  })

  it('are not sent with CACHE_TAG_HEADERS=false', async () => {
    h = await startShield({ env: { CACHE_TAG_HEADERS: 'false' } })
    const response = await h.get('/api/v1/cms/pages/')
    expect(response.headers['surrogate-key']).toBeUndefined()
    expect(response.headers['cache-tag']).toBeUndefined()
  })

  it('never change a body: the answer is still the CMS\'s own', async () => {
    h = await startShield()
    const mine = await h.get('/api/v1/cms/pages/?show_in_menus=true')
    const theirs = await h.origin_get('/api/v1/cms/pages/?show_in_menus=true')
    expect(mine.body).toBe(theirs.body.replaceAll('http://localhost/api/', 'https://shield.example/api/'))
  })
})

describe('an edit invalidates what depends on it, and only that', () => {
  it('keeps another section\'s list (same ETag, 304) and renews this section\'s', async () => {
    h = await startShield()
    const [edited, other] = twoSections(h)
    const before = {
      edited: await h.get(`/api/v1/cms/pages/?child_of=${edited}`),
      other: await h.get(`/api/v1/cms/pages/?child_of=${other}`),
      all: await h.get('/api/v1/cms/pages/'),
    }
    const child = childOf(h, edited)
    h.origin.updatePage(child.id, { title: `${child.title} (edited)` })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })

    const otherAfter = await h.get(`/api/v1/cms/pages/?child_of=${other}`, { 'if-none-match': String(before.other.headers['etag']) })
    expect(otherAfter.status).toBe(304)
    const editedAfter = await h.get(`/api/v1/cms/pages/?child_of=${edited}`)
    expect(editedAfter.headers['etag']).not.toBe(before.edited.headers['etag'])
    expect(editedAfter.body).toContain(`${child.title} (edited)`)
    expect((await h.get('/api/v1/cms/pages/')).headers['etag']).not.toBe(before.all.headers['etag'])
  })

  it('keeps a cached CMS answer scoped to another section, and asks again for one scoped to the edited section', async () => {
    h = await startShield()
    const [edited, other] = twoSections(h)
    const otherUrl = `/api/v1/cms/pages/?child_of=${other}&search=a`
    const editedUrl = `/api/v1/cms/pages/?child_of=${edited}&search=a`
    const wholeUrl = '/api/v1/cms/pages/?search=a'
    for (const url of [otherUrl, editedUrl, wholeUrl]) await h.get(url)
    const child = childOf(h, edited)
    h.origin.updatePage(child.id, { title: `${child.title} (edited)` })
    await h.app.shield.sync.syncNow()
    h.origin.resetHits()

    expect((await h.get(otherUrl)).headers['cache-status']).toMatch(/hit/)
    expect(h.origin.hits.total).toBe(0)
    await h.get(editedUrl)
    await h.get(wholeUrl)
    expect(h.origin.requests.map((r) => r.url)).toEqual([editedUrl, wholeUrl])
  })

  it('renews a moved page\'s old and new parent lists', async () => {
    h = await startShield()
    const [from, to] = twoSections(h)
    const child = childOf(h, from)
    await h.get(`/api/v1/cms/pages/?child_of=${from}`)
    await h.get(`/api/v1/cms/pages/?child_of=${to}`)
    h.origin.movePage(child.id, to)
    await h.app.shield.sync.syncNow()
    const ids = async (parent: number) => JSON.parse((await h!.get(`/api/v1/cms/pages/?child_of=${parent}`)).body).items.map((i: { id: number }) => i.id)
    expect(await ids(from)).not.toContain(child.id)
    expect(await ids(to)).toContain(child.id)
  })
})

describe('entries a new snapshot made unreachable', () => {
  it('are dropped from this instance\'s memory when the query is asked under its new key', async () => {
    h = await startShield()
    const search = '/api/v1/cms/pages/?search=a'
    expect((await h.get(search)).headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect(h.app.shield.memoryTier.entries).toBe(1)
    // A rename anywhere changes the whole-tree digest that keys a search.
    const page = h.origin.pages().find((p) => p.parentId !== null)!
    h.origin.updatePage(page.id, { title: `${page.title} (renamed)` })
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    h.origin.resetHits()
    const after = await h.get(search)
    expect(after.headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect(h.origin.hits.total).toBe(1)
    // The answer under the old key is gone, not left to wait for the LRU budget.
    expect(h.app.shield.memoryTier.entries).toBe(1)
    expect(after.body).toBe((await h.get(search)).body)
  })
})
