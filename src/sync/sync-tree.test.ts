/**
 * One sync of the tree (`syncTree`): when an incremental pass may say "nothing changed", so that
 * the sync keeps its snapshot without building a new one only to find it equal.
 */
import { describe, expect, it } from 'vitest'
import { renderWagtailJson } from '../json/json-text.js'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import { buildSnapshot, patchSnapshot } from '../tree/build-snapshot.js'
import { pagesArray } from '../tree/page-list.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { ListingWindows } from './fetch-tree.js'
import { syncTree, type SyncTreeOptions } from './sync-tree.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

/**
 * A CMS of `count` pages under page 1, listed three per window (and one by one with `?id=`);
 * titles, slugs and bodies can be edited and pages unpublished. The pages in `redirects` are
 * RedirectPages: their detail, and a listing filtered to their type, show an external address
 * where the generic listing shows the on-site one. `requests` logs every path asked.
 */
function cms(count: number, redirects: readonly number[] = []) {
  const titles = new Map<number, string>()
  const slugs = new Map<number, string>()
  const bodies = new Map<number, string>()
  const gone = new Set<number>()
  const detailsAsked: number[] = []
  const requests: string[] = []
  const title = (id: number) => titles.get(id) ?? `Page ${id}`
  const json = (body: unknown): UpstreamAnswer => ({ status: 200, contentType: 'application/json', headers: {}, text: renderWagtailJson(body) })
  const typeOf = (id: number) => (redirects.includes(id) ? 'cms.RedirectPage' : 'home.BlogPage')
  /** `specific`: as the page's own model shows it (its detail, a listing of its type). */
  const meta = (id: number, specific = false) => {
    const slug = slugs.get(id) ?? `p${id}`
    const htmlUrl = specific && redirects.includes(id) ? `https://partner.example/${slug}/` : `http://site/${slug}/`
    return { type: typeOf(id), detail_url: `http://cms/api/v1/cms/pages/${id}/`, html_url: htmlUrl, slug }
  }
  const live = () => Array.from({ length: count }, (_, i) => i + 1).filter((id) => !gone.has(id))
  const get: UpstreamGet = async (path) => {
    requests.push(path)
    const only = /[?&]id=(\d+)&/.exec(path)
    const type = /[?&]type=([^&]+)&/.exec(path)
    const offset = /offset=(\d+)/.exec(path)
    if (offset) {
      const from = Number(offset[1])
      const matching = live().filter((id) => (!only || id === Number(only[1])) && (!type || typeOf(id) === decodeURIComponent(type[1]!)))
      const ids = matching.slice(from, from + 3)
      return json({ meta: { total_count: matching.length }, items: ids.map((id) => ({ id, meta: meta(id, type !== null), title: title(id) })) })
    }
    const id = Number(/pages\/(\d+)\//.exec(path)![1])
    detailsAsked.push(id)
    if (gone.has(id)) return { status: 404, contentType: 'application/json', headers: {}, text: '{"message": "No Page matches the given query."}' }
    const parent = id === 1 ? null : { id: 1, meta: { type: 'home.BlogPage', detail_url: 'http://cms/api/v1/cms/pages/1/', html_url: meta(1).html_url }, title: title(1) }
    return json({ id, meta: { ...meta(id, true), show_in_menus: false, seo_title: '', search_description: '', parent }, title: title(id), body: bodies.get(id) ?? '' })
  }
  return { get, titles, slugs, bodies, gone, detailsAsked, requests }
}

function options(get: UpstreamGet, previous: Snapshot | undefined, extra: Partial<SyncTreeOptions> = {}): SyncTreeOptions {
  return {
    get,
    pagesPath: '/api/v1/cms/pages/',
    rewriteUrl: createUrlRewriter({ baseUrl: 'https://shield.example' }),
    pageSize: 3,
    concurrency: 2,
    signal: new AbortController().signal,
    previous,
    full: previous === undefined,
    requested: new Set(),
    withFields: undefined,
    ...extra,
  }
}

const DIALECT = { limitMax: 3, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused' as const, notAcceptableText: 'Could not satisfy the request Accept header.' }

async function firstSync(get: UpstreamGet) {
  const tree = await syncTree(options(get, undefined))
  const snapshot = buildSnapshot(pagesArray(tree.pages), { version: 1, syncedAt: 0, dialect: DIALECT })
  return { tree, snapshot, windows: tree.listing.windows }
}

describe('an incremental sync that finds nothing new', () => {
  it('says so when every listing window is byte for byte the last one and a requested page is unchanged', async () => {
    const site = cms(7)
    const { tree, snapshot, windows } = await firstSync(site.get)
    expect(tree.unchanged).toBe(false) // a full sync has nothing to compare with

    site.detailsAsked.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]) }))
    expect(site.detailsAsked).toEqual([4])
    expect(again.detailsFetched).toBe(1)
    expect(again.unchanged).toBe(true)
    // Nothing was planned or carried over: the pages are the snapshot's own records, and a caller
    // that builds anyway (a new dialect) gets the same snapshot.
    expect(again.pages).toBe(snapshot.pages)
    expect(buildSnapshot(pagesArray(again.pages), { version: 2, syncedAt: 0, dialect: DIALECT }).fingerprint).toBe(snapshot.fingerprint)
  })

  it('does not, when a requested page changed only in its body (no listing shows that)', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.bodies.set(4, 'edited')
    site.detailsAsked.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]) }))
    expect(again.unchanged).toBe(false)
    // Asked once, though both the first look and the plan want it.
    expect(site.detailsAsked).toEqual([4])
    expect(again.pages.slice().find((page) => page.id === 4)!.detail.toString()).toContain('"edited"')
    expect(again.pages).toHaveLength(7)
  })

  it('does not, when one listing window changed', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.titles.set(5, 'Renamed')
    const again = await syncTree(options(site.get, snapshot, { windows }))
    expect(again.listing.reused.size).toBe(again.listing.windows.size - 1)
    expect(again.unchanged).toBe(false)
  })

  it('does not, without the last pass to compare windows with', async () => {
    const site = cms(7)
    const { snapshot } = await firstSync(site.get)
    const again = await syncTree(options(site.get, snapshot))
    expect(again.unchanged).toBe(false)
  })
})

describe('a refresh of purged pages in place', () => {
  /** The kinds of request a sync made: `item` (a one-page listing), `typed item` (of its type), `window`, or a detail's id. */
  const kinds = (requests: readonly string[]) =>
    requests.map((path) => {
      if (/[?&]id=\d+&/.test(path)) return /[?&]type=/.test(path) ? 'typed item' : 'item'
      return path.includes('offset=') ? 'window' : Number(/pages\/(\d+)\//.exec(path)![1])
    })

  /** The records a listing pass builds from the CMS as it is now: what a refresh in place must give. */
  async function byListingPass(site: ReturnType<typeof cms>, previous: Snapshot, windows: ListingWindows) {
    const tree = await syncTree(options(site.get, previous, { windows, requested: new Set(previous.pages.slice().map((page) => page.id)) }))
    return buildSnapshot(pagesArray(tree.pages), { version: 3, syncedAt: 0, dialect: DIALECT })
  }

  it('takes a body-only edit with the page\'s item and its detail, and keeps every listing window', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.bodies.set(4, 'edited')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 4])
    expect(again.unchanged).toBe(false)
    expect(again.reasons).toMatchObject({ requested: 1, 'parent-changed': 0 })
    // Only page 4 is replaced; every other record stays as it is.
    expect([...again.replaced!.keys()]).toEqual([4])
    expect(again.replaced!.get(4)!.detail.toString()).toContain('"edited"')
    expect(again.pages).toBe(snapshot.pages)
    expect([...again.listing.windows.keys()]).toEqual([...windows.keys()])
    expect(again.listing.reused.size).toBe(windows.size)
  })

  it('takes a new title with the children\'s details (each embeds its parent\'s title), and drops the window that showed the old one', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.titles.set(1, 'Home, renamed')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([1]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 1, 2, 3, 4, 5, 6, 7])
    expect(again.reasons).toMatchObject({ requested: 1, 'parent-changed': 6 })
    expect(again.detailsFetched).toBe(7)
    expect([...again.replaced!.keys()].sort()).toEqual([1, 2, 3, 4, 5, 6, 7])
    const rebuilt = patchSnapshot(snapshot, again.replaced!, { version: 2, syncedAt: 0, dialect: DIALECT })
    expect(rebuilt.byId.get(1)!.listItem).toContain('Home, renamed')
    expect(rebuilt.byId.get(5)!.detail.toString()).toContain('Home, renamed')
    // The window of page 1 describes its old item: the next pass reads it again.
    expect([...again.listing.windows.keys()]).toEqual([...windows.keys()].filter((path) => !path.includes('offset=0&')))
  })

  it('takes a new title of a RedirectPage with its typed listing item, as the listing pass would build it', async () => {
    const site = cms(7, [4])
    const { snapshot, windows } = await firstSync(site.get)
    expect(snapshot.byId.get(4)!.typedListItem).toContain('https://partner.example/p4/')
    site.titles.set(4, 'Partner, renamed')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 4, 'typed item'])
    expect([...again.replaced!.keys()]).toEqual([4])
    const patched = patchSnapshot(snapshot, again.replaced!, { version: 2, syncedAt: 0, dialect: DIALECT })
    const rebuilt = await byListingPass(site, snapshot, windows)
    for (const id of [1, 4, 5]) expect(patched.byId.get(id)).toEqual(rebuilt.byId.get(id))
    expect(patched.byId.get(4)!.typedListItem).toContain('Partner, renamed')
    expect(patched.fingerprint).toBe(rebuilt.fingerprint)
  })

  it('takes a new title of the parent of a RedirectPage: the child\'s detail and typed item are read again', async () => {
    const site = cms(5, [3])
    const { snapshot, windows } = await firstSync(site.get)
    site.titles.set(1, 'Home, renamed')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([1]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 1, 2, 3, 4, 5, 'typed item'])
    const patched = patchSnapshot(snapshot, again.replaced!, { version: 2, syncedAt: 0, dialect: DIALECT })
    expect(patched.fingerprint).toBe((await byListingPass(site, snapshot, windows)).fingerprint)
  })

  it('says nothing changed when a purged RedirectPage is as the snapshot holds it', async () => {
    const site = cms(7, [4])
    const { snapshot, windows } = await firstSync(site.get)
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 4, 'typed item'])
    expect(again.unchanged).toBe(true)
  })

  it('leaves a page that starts showing another URL in its detail to the listing pass', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.requests.length = 0
    // Page 4's detail, and only its detail, now shows an external address (its model overrides its URL).
    const overridden: UpstreamGet = async (path, signal) => {
      const answer = await site.get(path, signal)
      return path.endsWith('/pages/4/') ? { ...answer, text: answer.text.replace('"http://site/p4/"', '"https://partner.example/p4/"') } : answer
    }
    const again = await syncTree(options(overridden, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(again.replaced).toBeUndefined()
    expect(kinds(site.requests).slice(0, 3)).toEqual(['item', 4, 'window'])
  })

  it('says nothing changed when the purged page is as the snapshot holds it', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(kinds(site.requests)).toEqual(['item', 4])
    expect(again.unchanged).toBe(true)
    expect(again.pages).toBe(snapshot.pages)
  })

  it('leaves a new slug to the listing pass (the pages below move with it)', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.slugs.set(4, 'moved')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(again.replaced).toBeUndefined()
    expect(kinds(site.requests)).toEqual(['item', 'window', 'window', 'window', 4])
    expect(again.pages.slice().find((page) => page.id === 4)!.slug).toBe('moved')
  })

  it('leaves an unpublished page, and one the snapshot does not hold, to the listing pass', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.gone.add(4)
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]), inPlace: true }))
    expect(again.replaced).toBeUndefined()
    // Six pages left: two windows.
    expect(kinds(site.requests)).toEqual(['item', 'window', 'window'])
    expect(again.removed).toBe(1)

    site.requests.length = 0
    const unknown = await syncTree(options(site.get, snapshot, { windows, requested: new Set([99]), inPlace: true }))
    expect(unknown.replaced).toBeUndefined()
    expect(kinds(site.requests)).toEqual(['window', 'window'])
  })

  /**
   * `get` that answers on a later turn of the event loop and records how many requests (of those
   * `counted`) were in flight at most.
   */
  function gauged(get: UpstreamGet, counted: (path: string) => boolean = () => true) {
    let inFlight = 0
    let most = 0
    const wrapped: UpstreamGet = async (path, signal) => {
      const counts = counted(path)
      if (counts) most = Math.max(most, ++inFlight)
      try {
        await new Promise((resolve) => setImmediate(resolve))
        return await get(path, signal)
      } finally {
        if (counts) inFlight--
      }
    }
    return { get: wrapped, most: () => most }
  }

  it('reads the typed items of a renamed parent\'s RedirectPage children side by side, concurrency at a time', async () => {
    const site = cms(9, [2, 3, 4, 5, 6, 7, 8, 9])
    const { snapshot, windows } = await firstSync(site.get)
    site.titles.set(1, 'Home, renamed')
    for (const concurrency of [1, 3]) {
      site.requests.length = 0
      const gauge = gauged(site.get, (path) => kinds([path])[0] === 'typed item')
      const again = await syncTree(options(gauge.get, snapshot, { windows, requested: new Set([1]), inPlace: true, concurrency }))
      expect(gauge.most()).toBe(concurrency)
      expect(kinds(site.requests).filter((kind) => kind === 'typed item')).toHaveLength(8)
      const patched = patchSnapshot(snapshot, again.replaced!, { version: 2, syncedAt: 0, dialect: DIALECT })
      expect(patched.fingerprint).toBe((await byListingPass(site, snapshot, windows)).fingerprint)
    }
  })

  it('refreshes several purged pages side by side, concurrency requests at a time, each as if alone', async () => {
    const site = cms(9, [6])
    const { snapshot, windows } = await firstSync(site.get)
    for (const id of [3, 4, 5, 6, 7]) site.bodies.set(id, `edited ${id}`)
    site.titles.set(6, 'Partner, renamed')
    site.requests.length = 0
    const gauge = gauged(site.get)
    const again = await syncTree(options(gauge.get, snapshot, { windows, requested: new Set([3, 4, 5, 6, 7]), inPlace: true, concurrency: 2 }))
    expect(gauge.most()).toBe(2)
    // One item and one detail per page, and the RedirectPage's typed item: nothing more.
    expect(kinds(site.requests).sort()).toEqual([3, 4, 5, 6, 7, 'item', 'item', 'item', 'item', 'item', 'typed item'].sort())
    expect([...again.replaced!.keys()]).toEqual([3, 4, 5, 6, 7])
    const patched = patchSnapshot(snapshot, again.replaced!, { version: 2, syncedAt: 0, dialect: DIALECT })
    expect(patched.fingerprint).toBe((await byListingPass(site, snapshot, windows)).fingerprint)
  })

  it('runs the listing pass as before when not asked to refresh in place', async () => {
    const site = cms(7)
    const { snapshot, windows } = await firstSync(site.get)
    site.bodies.set(4, 'edited')
    site.requests.length = 0
    const again = await syncTree(options(site.get, snapshot, { windows, requested: new Set([4]) }))
    expect(again.replaced).toBeUndefined()
    expect(kinds(site.requests)).toEqual(['window', 'window', 'window', 4])
  })
})
