/**
 * One sync of the tree (`syncTree`): when an incremental pass may say "nothing changed", so that
 * the sync keeps its snapshot without building a new one only to find it equal.
 */
import { describe, expect, it } from 'vitest'
import { renderWagtailJson } from '../json/json-text.js'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import { buildSnapshot } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { syncTree, type SyncTreeOptions } from './sync-tree.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

/** A CMS of `count` pages under page 1, listed three per window; titles and bodies can be edited. */
function cms(count: number) {
  const titles = new Map<number, string>()
  const bodies = new Map<number, string>()
  const detailsAsked: number[] = []
  const title = (id: number) => titles.get(id) ?? `Page ${id}`
  const json = (body: unknown): UpstreamAnswer => ({ status: 200, contentType: 'application/json', headers: {}, text: renderWagtailJson(body) })
  const meta = (id: number) => ({ type: 'home.BlogPage', detail_url: `http://cms/api/v1/cms/pages/${id}/`, html_url: `http://site/${id}/`, slug: `p${id}` })
  const get: UpstreamGet = async (path) => {
    const offset = /offset=(\d+)/.exec(path)
    if (offset) {
      const from = Number(offset[1])
      const ids = Array.from({ length: count }, (_, i) => i + 1).slice(from, from + 3)
      return json({ meta: { total_count: count }, items: ids.map((id) => ({ id, meta: meta(id), title: title(id) })) })
    }
    const id = Number(/pages\/(\d+)\//.exec(path)![1])
    detailsAsked.push(id)
    const parent = id === 1 ? null : { id: 1, meta: { type: 'home.BlogPage', detail_url: 'http://cms/api/v1/cms/pages/1/', html_url: 'http://site/1/' }, title: title(1) }
    return json({ id, meta: { ...meta(id), show_in_menus: false, seo_title: '', search_description: '', parent }, title: title(id), body: bodies.get(id) ?? '' })
  }
  return { get, titles, bodies, detailsAsked }
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
    withFields: false,
    ...extra,
  }
}

const DIALECT = { limitMax: 3, emptyTypeIgnored: true, findKeepsQuery: true }

async function firstSync(get: UpstreamGet) {
  const tree = await syncTree(options(get, undefined))
  const snapshot = buildSnapshot(tree.pages, { version: 1, syncedAt: 0, dialect: DIALECT })
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
    expect(buildSnapshot(again.pages, { version: 2, syncedAt: 0, dialect: DIALECT }).fingerprint).toBe(snapshot.fingerprint)
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
    expect(again.pages.find((page) => page.id === 4)!.detail.toString()).toContain('"edited"')
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
