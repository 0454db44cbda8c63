/**
 * The listing pass (`fetchListingPass`): windows read in parallel but assembled in tree order,
 * every consistency check of a sequential walk, and unchanged windows taken from the last pass
 * instead of being parsed again.
 */
import { describe, expect, it } from 'vitest'
import { isProxyError } from '../errors.js'
import { renderWagtailJson } from '../json/json-text.js'
import { createUrlRewriter } from '../json/rewrite-detail-urls.js'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { buildSnapshot } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { fetchListingPass, windowsToKeep, type FetchTreeOptions, type ListingPass } from './fetch-tree.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

interface StubPage { id: number; title: string }

/** A CMS listing of `pages` at page size `limit`; `total` overrides total_count per offset. */
function listingCms(pages: StubPage[], options: { total?: (offset: number) => number; delayFor?: (offset: number) => number } = {}) {
  const requests: string[] = []
  const get: UpstreamGet = async (path) => {
    requests.push(path)
    const offset = Number(/offset=(\d+)/.exec(path)![1])
    const limit = Number(/limit=(\d+)/.exec(path)![1])
    await new Promise((resolve) => setTimeout(resolve, options.delayFor?.(offset) ?? 0))
    const items = pages.slice(offset, offset + limit).map((page) => ({
      id: page.id,
      meta: { type: 'home.BlogPage', detail_url: `http://cms/api/v1/cms/pages/${page.id}/`, html_url: `http://site/${page.id}/`, slug: `p${page.id}`, first_published_at: null },
      title: page.title,
    }))
    const answer: UpstreamAnswer = {
      status: 200, contentType: 'application/json', headers: {},
      text: renderWagtailJson({ meta: { total_count: options.total?.(offset) ?? pages.length }, items }),
    }
    return answer
  }
  return { get, requests }
}

function fetchOptions(get: UpstreamGet, pageSize = 3): FetchTreeOptions {
  return {
    get,
    pagesPath: '/api/v1/cms/pages/',
    rewriteUrl: createUrlRewriter({ baseUrl: 'https://shield.example' }),
    pageSize,
    concurrency: 4,
    signal: new AbortController().signal,
  }
}

const tenPages = (): StubPage[] => Array.from({ length: 10 }, (_, i) => ({ id: i + 1, title: `Page ${i + 1}` }))

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    expect(isProxyError(error, 'SYNC_INCONSISTENT')).toBe(true)
    return (error as Error).message
  }
  throw new Error('the pass did not fail')
}

/** A snapshot of a pass's pages under page 1, built from the pass's own listing strings. */
function snapshotOf(pass: ListingPass): Snapshot {
  return buildSnapshot(
    pass.pages.map((page, i) => ({
      id: page.id, type: page.type, title: page.title, slug: page.slug, showInMenus: false, seoTitle: '', searchDescription: '',
      parentId: i === 0 ? null : 1, listItem: page.listItem, detail: '{}',
    })),
    { version: 1, syncedAt: 0, dialect: { limitMax: 3, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' } },
  )
}

describe('a listing pass', () => {
  it('reads the windows after the first in parallel and keeps tree order whatever order they arrive in', async () => {
    // Later windows answer first.
    const cms = listingCms(tenPages(), { delayFor: (offset) => (offset === 3 ? 30 : 0) })
    const pass = await fetchListingPass(fetchOptions(cms.get))
    expect(pass.pages.map((page) => page.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(cms.requests).toHaveLength(4)
    expect(pass.windows.size).toBe(4)
    expect(pass.reused.size).toBe(0)
    expect(pass.pages[0]!.listItem).toContain('https://shield.example/api/v1/cms/pages/1/')
  })

  it('refuses a total_count that changes between windows', async () => {
    const cms = listingCms(tenPages(), { total: (offset) => (offset === 6 ? 11 : 10) })
    expect(await failure(fetchListingPass(fetchOptions(cms.get)))).toMatch(/total_count changed from 10 to 11 while paging/)
  })

  it('refuses a window that comes back short, and a page listed twice', async () => {
    const short = listingCms(tenPages().slice(0, 8), { total: () => 10 })
    expect(await failure(fetchListingPass(fetchOptions(short.get)))).toMatch(/the listing ended after 8 of 10 pages/)
    const pages = tenPages()
    pages[7] = { ...pages[2]! }
    const twice = listingCms(pages)
    expect(await failure(fetchListingPass(fetchOptions(twice.get)))).toMatch(/page 3 is listed twice/)
  })

  it('takes unchanged windows from the last pass without parsing them, and parses a changed one', async () => {
    const pages = tenPages()
    const cms = listingCms(pages)
    const first = await fetchListingPass(fetchOptions(cms.get))
    const snapshot = snapshotOf(first)
    // Kept windows point at the snapshot's texts; a window that disagrees with it is dropped.
    const kept = await windowsToKeep(first, snapshot, async () => {})
    expect(kept.size).toBe(4)
    expect(kept.get([...kept.keys()][0]!)!.pages[0]).toMatchObject({ id: 1, listItem: snapshot.byId.get(1)!.listItem })
    const other = makeSnapshot(first.pages.map((page, i) => ({ id: page.id, parent: i === 0 ? null : 1 })))
    expect((await windowsToKeep(first, other, async () => {})).size).toBe(0)

    pages[4] = { id: 5, title: 'Page 5, edited' }
    const second = await fetchListingPass(fetchOptions(cms.get), { reuse: kept })
    expect(second.pages.map((page) => page.title)).toEqual(pages.map((page) => page.title))
    // Window [3, 6) changed; the three others are the very windows of the first pass.
    expect([...second.reused].map((path) => /offset=(\d+)/.exec(path)![1])).toEqual(['0', '6', '9'])
    for (const path of second.reused) expect(second.windows.get(path)).toBe(kept.get(path))
    expect(second.pages[4]!.listItem).toContain('Page 5, edited')
  })

  it('keeps the very listed pages a snapshot was built from, and copies of the others', async () => {
    const cms = listingCms(tenPages())
    const pass = await fetchListingPass(fetchOptions(cms.get))
    const snapshot = snapshotOf(pass)
    const fetched = new Set([1, 2, 3, 7])
    const kept = await windowsToKeep(pass, snapshot, async () => {}, fetched)
    const keptPages = [...kept.values()].flatMap((window) => window.pages)
    expect(keptPages.map((page) => page.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    keptPages.forEach((page, i) => {
      if (fetched.has(page.id)) expect(page).toBe(pass.pages[i])
      else expect(page).not.toBe(pass.pages[i])
      expect(page).toEqual(pass.pages[i])
    })
  })
})
