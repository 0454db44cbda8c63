/**
 * A refresh of the pages a PURGE named, without a listing pass, when the CMS shows that nothing
 * about them but their own content changed.
 *
 * Wagtail purges a page's URL when the page is published or unpublished, never on a move, a
 * reorder or for its parents (docs/wagtail-compatibility.md#what-wagtail-purges). A publish most often edits the page in place: its body,
 * its title, its flags. A listing pass finds that too, but it reads the whole listing (a request
 * per window of the tree, and much of cms-shield's CPU); here each named page
 * costs its one-item listing (`?id=`) and its detail, plus its children's details when its
 * listing item changed, because each child's detail embeds its parent's title (`meta.parent`,
 * docs/wagtail-compatibility.md#response-bodies), as the listing pass's plan does (`plan-refresh.ts`).
 *
 * A page whose model shows another URL than the generic listing (a RedirectPage shows its external
 * address) keeps a typed listing item (`typedListItem`): it costs one more request, the one-item
 * listing of its type, as the listing pass reads the listing of each such type
 * (docs/wagtail-compatibility.md#response-bodies).
 *
 * Anything this cannot place for certain is left to the listing pass (the result is `undefined`):
 * a page the snapshot does not hold, one the listing no longer shows (unpublished), a new slug,
 * URL, type or parent (the pages below would move with it), a page without a typed item whose
 * detail starts showing another URL than its listing item, or a detail that disagrees with its
 * listing item (an edit in progress). Pure over its `get`: no timers, and no state but a memory of
 * each window's page ids.
 *
 * The named pages are refreshed side by side, and so are the children's details and typed items,
 * `concurrency` (SYNC_CONCURRENCY) requests at a time as in a listing pass: a parent with 80
 * RedirectPage children reads 80 typed items, which one after another took 80 round trips of the
 * CMS before the edit could show.
 * @module
 */
import { isProxyError } from '../errors.js'
import { pageDigest, type SyncedPage } from '../tree/build-snapshot.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import {
  fetchDetails, fetchListingPass, localeOfWindows, withTypedItem, type FetchTreeOptions, type FetchedPage, type ListingOptions, type ListingWindow, type ListingWindows,
} from './fetch-tree.js'
import type { ListingExtras } from './listing-fields.js'
import { mapBounded } from './map-bounded.js'
import type { ListedPage } from './plan-refresh.js'

/** At most this many named pages are refreshed in place; a bigger burst takes the listing pass. */
export const MAX_IN_PLACE_PAGES = 20

export interface RefreshInPlaceOptions extends FetchTreeOptions {
  readonly previous: Snapshot
  readonly requested: ReadonlySet<number>
  /** Read the one-item listings with the extra meta fields, as the listing pass does. */
  readonly withFields: ListingExtras | undefined
  /** The last pass's windows: kept for the next pass, less those holding a page whose item changed. */
  readonly windows: ListingWindows | undefined
}

export interface InPlaceRefresh {
  /**
   * The refreshed pages by id, each in the place its record holds in the previous snapshot:
   * `patchSnapshot` swaps them in without rebuilding the tree.
   */
  readonly replaced: ReadonlyMap<number, SyncedPage>
  /** Nothing differs from the previous snapshot. */
  readonly unchanged: boolean
  readonly requested: number
  /** Children fetched again because their parent's listing item changed. */
  readonly parentChanged: number
  /** The windows the next listing pass may still take as they are. */
  readonly windows: Map<string, ListingWindow>
}

/** Thrown inside to give the work back to the listing pass. */
class NeedsListingPass extends Error {}

/** `meta.html_url` of a snapshot record, read back from its listing item. */
function htmlUrlOf(record: PageRecord): string | null {
  const item = JSON.parse(record.listItem) as { meta?: { html_url?: unknown } }
  const url = item.meta?.html_url
  return typeof url === 'string' ? url : null
}

/** The listing fields a record was built from: what a child's detail is checked against. */
function listedFrom(record: PageRecord, withFields: ListingExtras | undefined): ListedPage {
  return {
    id: record.id,
    type: record.type,
    title: record.title,
    slug: record.slug,
    htmlUrl: htmlUrlOf(record),
    listItem: record.listItem,
    ...(withFields ? { flags: { showInMenus: record.showInMenus, seoTitle: record.seoTitle, searchDescription: record.searchDescription } } : {}),
  }
}

/**
 * Each window's page ids, worked out once per window: windows never change and are carried from
 * one refresh to the next, so a refresh looks up the pages it changed instead of reading every
 * window's pages again (a scan that held up the serving thread at every edit, docs/performance.md,
 * "Edits across a cluster").
 */
const windowIds = new WeakMap<ListingWindow, ReadonlySet<number>>()

function idsOf(window: ListingWindow): ReadonlySet<number> {
  let ids = windowIds.get(window)
  if (ids === undefined) windowIds.set(window, (ids = new Set(window.pages.map((page) => page.id))))
  return ids
}

/** A detail that may replace `record` in place: same parent, and the same URL as its listing item. */
function placeable(fetched: FetchedPage, record: PageRecord): SyncedPage {
  if (fetched.urlDiffers || fetched.page.parentId !== record.parentId) throw new NeedsListingPass()
  return fetched.page
}

async function details(options: RefreshInPlaceOptions, pages: readonly ListedPage[]): Promise<FetchedPage[]> {
  try {
    return await fetchDetails(options, pages)
  } catch (error) {
    // A page gone or changed between its listing and its detail: the pass sorts that out.
    if (isProxyError(error, 'SYNC_INCONSISTENT')) throw new NeedsListingPass()
    throw error
  }
}

/** The one item of a listing filtered to `record`'s id (and `listing`), with its type and slug as `record` holds them. */
async function itemNow(options: RefreshInPlaceOptions, record: PageRecord, listing: ListingOptions): Promise<ListedPage> {
  let pass: Awaited<ReturnType<typeof fetchListingPass>>
  try {
    pass = await fetchListingPass(options, listing)
  } catch (error) {
    if (isProxyError(error, 'SYNC_INCONSISTENT')) throw new NeedsListingPass()
    throw error
  }
  const listed = pass.pages
  const item = listed[0]
  if (listed.length !== 1 || item!.id !== record.id || item!.type !== record.type || item!.slug !== record.slug) throw new NeedsListingPass()
  // The snapshot records the one language every page has (`Dialect.unlistedLocale`): this page's must be it.
  const locale = options.previous.dialect.unlistedLocale
  if (listing.withFields?.locale && locale !== undefined && localeOfWindows(pass.windows.values()) !== locale) throw new NeedsListingPass()
  return item!
}

/** The page's item as a listing filtered to its id shows it now. */
async function listedNow(options: RefreshInPlaceOptions, record: PageRecord): Promise<ListedPage> {
  const item = await itemNow(options, record, { filter: `id=${record.id}&`, withFields: options.withFields })
  if (item.htmlUrl !== htmlUrlOf(record)) throw new NeedsListingPass()
  return item
}

/**
 * `fetched` as it replaces `record`. A page with a typed listing item gets it again from the
 * one-item listing of its type, read as the listing pass reads a type's listing (no extra meta
 * fields); its detail may show another URL than its listing item, which is why it has one.
 */
async function replacement(options: RefreshInPlaceOptions, fetched: FetchedPage, record: PageRecord): Promise<SyncedPage> {
  if (record.typedListItem === undefined) return placeable(fetched, record)
  if (fetched.page.parentId !== record.parentId) throw new NeedsListingPass()
  const typed = await itemNow(options, record, { filter: `type=${encodeURIComponent(record.type)}&id=${record.id}&` })
  return withTypedItem(fetched.page, typed.listItem)
}

/** Refreshes `options.requested` in place, or returns `undefined` when a listing pass is needed. */
export async function refreshInPlace(options: RefreshInPlaceOptions): Promise<InPlaceRefresh | undefined> {
  const { previous, requested } = options
  if (requested.size === 0 || requested.size > MAX_IN_PLACE_PAGES) return undefined
  const records: PageRecord[] = []
  for (const id of requested) {
    const record = previous.byId.get(id)
    if (record === undefined) return undefined
    records.push(record)
  }
  try {
    const replaced = new Map<number, SyncedPage>()
    const itemChanged = new Set<number>()
    const refreshed = await mapBounded(records, options.concurrency, options.signal, async (record) => {
      const item = await listedNow(options, record)
      const [fetched] = await details(options, [item])
      return { item, page: await replacement(options, fetched!, record) }
    })
    for (const [i, { item, page }] of refreshed.entries()) {
      const record = records[i]!
      replaced.set(record.id, page)
      if (item.listItem !== record.listItem) itemChanged.add(record.id)
    }

    const children: PageRecord[] = []
    for (const id of itemChanged) {
      for (const child of previous.childrenOf.get(id) ?? []) if (!replaced.has(child.id)) children.push(child)
    }
    // Every child is fetched, as the listing pass's plan would fetch them ('parent-changed').
    const fetchedChildren = await details(options, children.map((child) => listedFrom(child, options.withFields)))
    const childPages = await mapBounded(fetchedChildren, options.concurrency, options.signal, (fetched, i) => replacement(options, fetched, children[i]!))
    for (const [i, page] of childPages.entries()) replaced.set(children[i]!.id, page)

    const windows = new Map<string, ListingWindow>()
    const changedIds = [...itemChanged]
    for (const [path, window] of options.windows ?? []) {
      // A window showing an item that changed describes the old item: the next pass reads it again.
      if (changedIds.length === 0 || !changedIds.some((id) => idsOf(window).has(id))) windows.set(path, window)
    }
    const unchanged = [...replaced.values()].every((page) =>
      previous.byId.get(page.id)!.digest === (page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)))
    return {
      replaced,
      unchanged,
      requested: requested.size,
      parentChanged: children.length,
      windows,
    }
  } catch (error) {
    if (error instanceof NeedsListingPass) return undefined
    throw error
  }
}
