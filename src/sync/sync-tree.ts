/**
 * One sync of the page tree: full (the listing, every detail) or incremental (the listing, then
 * only the details `plan-refresh.ts` picks). An incremental sync carries every other page over
 * from the previous snapshot as it is, detail Buffer and digest included, so the new snapshot
 * rebuilds only what changed and unchanged pages keep their rendered bytes and ETags.
 * @module
 */
import { carryOver, type SyncedPage } from '../tree/build-snapshot.js'
import type { PageSequence } from '../tree/page-list.js'
import { inSlices, runToEnd, runWithPauses, type Steps } from '../tree/slices.js'
import type { Snapshot } from '../tree/snapshot.js'
import {
  fetchDetails, fetchListingPass, fetchTypedItems, withTypedItem, type BuiltFromPass, type FetchTreeOptions, type FetchedPage, type ListingPass, type ListingWindows,
} from './fetch-tree.js'
import type { ListingExtras } from './listing-fields.js'
import { planRefresh, planRefreshInSlices, type ListedPage, type RefreshReason } from './plan-refresh.js'
import { refreshInPlace } from './refresh-in-place.js'
import { walkWithoutUrls } from './walk-without-urls.js'

export interface SyncTreeOptions extends FetchTreeOptions {
  /** The snapshot to refresh; `undefined` (or `full`) fetches everything. */
  readonly previous: Snapshot | undefined
  readonly full: boolean
  /** Pages a PURGE or the webhook named: fetched again even when their listing item is unchanged. */
  readonly requested: ReadonlySet<number>
  /** Read the listing with the extra meta fields (probed: `probeListingFields`); `undefined`: without. */
  readonly withFields: ListingExtras | undefined
  /** The last pass's windows, when `previous` was built from it: unchanged windows are not parsed again. */
  readonly windows?: ListingWindows
  /**
   * Only PURGEs of known pages asked for this sync: try refreshing them in place, without a
   * listing pass (`refresh-in-place.ts`), which runs only when that cannot place them for certain.
   */
  readonly inPlace?: boolean
  /**
   * Read the listing without `html_url` and derive it (`walk-without-urls.ts`) when the previous
   * snapshot's URLs derive; the CMS takes `fields=-html_url` (probed: `probeBareListing`).
   */
  readonly deriveUrls?: boolean
}

export interface SyncedTree {
  /** Every page in listing order; when `unchanged`, the previous snapshot's own records. */
  readonly pages: PageSequence<SyncedPage>
  readonly mode: 'full' | 'incremental'
  /** Details fetched (all pages on a full sync). */
  readonly detailsFetched: number
  /** Incremental only: why pages were fetched again. */
  readonly reasons?: Readonly<Record<RefreshReason, number>>
  readonly removed: number
  /** The listing pass, to keep its windows for the next sync (`windowsToKeep`). */
  readonly listing: ListingPass
  /**
   * The pages whose details this sync fetched, out of `listing`'s own pages: a snapshot built from
   * `pages` holds their listing strings as they are (`windowsToKeep`'s `built`).
   */
  readonly fetched?: BuiltFromPass
  /**
   * Incremental only: the CMS showed exactly the previous snapshot's pages (every listing window
   * byte for byte the same, every detail fetched again with the same digest), so building a new
   * snapshot would only prove it the same again. `pages` are still complete.
   */
  readonly unchanged: boolean
  /**
   * The requested pages were refreshed in place (no listing pass ran; `listing` holds the windows
   * still valid): these pages replace their records (`patchSnapshot`), and `pages` are the
   * previous snapshot's records as they were.
   */
  readonly replaced?: ReadonlyMap<number, SyncedPage>
  /** An incremental walk that may derive `html_url`: whether it did (`SyncResult.urls`). */
  readonly urls?: 'derived' | 'read'
}

/**
 * Types whose typed listing must be read again: a fetched page of the type shows another URL in
 * its detail than in the generic listing, or had a typed item before.
 */
function typesToList(fetched: readonly FetchedPage[], previous: Snapshot | undefined): Set<string> {
  const types = new Set<string>()
  for (const { page, urlDiffers } of fetched) {
    if (urlDiffers || previous?.byId.get(page.id)?.typedListItem !== undefined) types.add(page.type)
  }
  return types
}

const NO_REASONS: Readonly<Record<RefreshReason, number>> = {
  new: 0, changed: 0, requested: 0, 'parent-changed': 0, 'parent-removed': 0, 'parent-restored': 0, reordered: 0,
}

/** A fetched page that is byte for byte, and in place, what `previous` holds for it. */
function sameAsBefore(page: SyncedPage, previous: Snapshot): boolean {
  const before = previous.byId.get(page.id)
  return before !== undefined && before.digest === page.digest && before.parentId === page.parentId
}

/** The pages of the new tree in listing order, a slice at a time (one object per page at 100,000 pages). */
function* assembleSteps(listed: readonly ListedPage[], pageOf: (item: ListedPage) => SyncedPage): Steps<SyncedPage[]> {
  const pages = new Array<SyncedPage>(listed.length)
  yield* inSlices(listed.length, (from, to) => {
    for (let i = from; i < to; i++) pages[i] = pageOf(listed[i]!)
  })
  return pages
}

/** A walk of the listing and the details it called for (`walkWithUrls`, `walkWithoutUrls`). */
interface TreeWalk {
  readonly listing: ListingPass
  readonly fetched: readonly FetchedPage[]
  /** Incremental only: why pages were fetched again. */
  readonly reasons?: Readonly<Record<RefreshReason, number>> | undefined
  readonly removed: number
  /** The CMS showed exactly the previous snapshot's pages (`SyncedTree.unchanged`). */
  readonly unchanged: boolean
}

export async function syncTree(options: SyncTreeOptions): Promise<SyncedTree> {
  const previous = options.full ? undefined : options.previous
  if (previous && options.inPlace) {
    const refreshed = await refreshInPlace({ ...options, previous, windows: options.windows })
    if (refreshed) {
      return {
        pages: previous.pages,
        replaced: refreshed.replaced,
        unchanged: refreshed.unchanged,
        mode: 'incremental',
        detailsFetched: refreshed.requested + refreshed.parentChanged,
        reasons: { ...NO_REASONS, requested: refreshed.requested, 'parent-changed': refreshed.parentChanged },
        removed: 0,
        // No pass ran: the windows still valid are handed on as if this pass had read them.
        listing: { pages: [], windows: refreshed.windows, reused: new Set(refreshed.windows.keys()) },
      }
    }
  }
  const derivable = previous !== undefined && options.deriveUrls === true
  const derived = derivable ? await walkWithoutUrls({ ...options, previous }) : undefined
  const walk = derived ?? (await walkWithUrls(options, previous))
  const urls = derivable ? { urls: derived ? 'derived' as const : 'read' as const } : {}
  const { listing, fetched, reasons, removed } = walk
  const listed = listing.pages
  if (walk.unchanged) {
    return {
      pages: previous!.pages,
      unchanged: true,
      mode: 'incremental',
      detailsFetched: fetched.length,
      reasons: reasons ?? NO_REASONS,
      removed: 0,
      listing,
      ...urls,
    }
  }
  // Filled in a loop: at 100,000 pages, `new Map(fetched.map(...))` leaves as many [id, page] pairs behind as garbage.
  const byId = new Map<number, SyncedPage>()
  for (const { page } of fetched) byId.set(page.id, page)

  const typed = new Map<number, string>()
  const listedTypes = typesToList(fetched, previous)
  for (const type of listedTypes) {
    const expected = listed.filter((page) => page.type === type).map((page) => page.id)
    for (const [id, item] of await fetchTypedItems(options, type, expected)) typed.set(id, item)
  }

  const steps = assembleSteps(listed, (item) => {
    const page = byId.get(item.id) ?? carryOver(previous!.byId.get(item.id)!)
    return listedTypes.has(page.type) ? withTypedItem(page, typed.get(page.id)) : page
  })
  const pages = options.pause ? await runWithPauses(steps, options.pause) : runToEnd(steps)
  return {
    pages,
    // Every pass that could be unchanged (every window one the snapshot was built from) was
    // decided above; here something differs.
    unchanged: false,
    mode: previous ? 'incremental' : 'full',
    detailsFetched: fetched.length,
    ...(reasons ? { reasons } : {}),
    removed,
    listing,
    fetched: byId,
    ...urls,
  }
}

/** The listing read with `html_url`, as the CMS writes it, and the details its changes call for. */
async function walkWithUrls(options: SyncTreeOptions, previous: Snapshot | undefined): Promise<TreeWalk> {
  const listing = await fetchListingPass(options, { withFields: options.withFields, ...(previous && options.windows ? { reuse: options.windows } : {}) })
  const listed = listing.pages
  // Every window byte for byte one the previous snapshot was built from, and as many pages: the
  // listing is the snapshot's own, so only the requested details can differ. Fetched first, they
  // decide whether the pass changed anything at all, without planning over every page.
  let early: FetchedPage[] = []
  if (previous && options.windows && listing.reused.size === listing.windows.size && listed.length === previous.pages.length) {
    early = await fetchDetails(options, options.requested.size === 0 ? [] : listed.filter((page) => options.requested.has(page.id)))
    if (typesToList(early, previous).size === 0 && early.every(({ page }) => sameAsBefore(page, previous))) {
      return { listing, fetched: early, reasons: { ...NO_REASONS, requested: early.length }, removed: 0, unchanged: true }
    }
  }
  let toFetch: readonly ListedPage[] = listed
  let reasons: Readonly<Record<RefreshReason, number>> | undefined
  let removed: number
  if (previous) {
    const plan = options.pause ? await planRefreshInSlices(previous, listed, options.requested, options.pause) : planRefresh(previous, listed, options.requested)
    toFetch = plan.fetch
    reasons = plan.reasons
    removed = plan.removed.length
  } else if (options.previous) {
    const listedIds = new Set<number>()
    for (const page of listed) listedIds.add(page.id)
    removed = 0
    for (const record of options.previous.pages) if (!listedIds.has(record.id)) removed++
  } else {
    removed = 0
  }
  const fetchedEarly = new Set(early.map(({ page }) => page.id))
  const fetched = [...early, ...(await fetchDetails(options, toFetch.filter((page) => !fetchedEarly.has(page.id))))]
  return { listing, fetched, reasons, removed, unchanged: false }
}
