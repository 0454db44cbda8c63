/**
 * The sync's one executor of CMS requests: the page size and the listing's fields (asked of
 * `CmsFacts`), the tree (`sync-tree.ts`: a full or incremental pass, or a refresh in place), and
 * the dialect the snapshot records. It decides nothing the plan has not (`plan-sync.ts`) but the
 * one retry a CMS's own answer calls for: a page size it now refuses is asked for again.
 * @module
 */
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { Pause } from '../tree/slices.js'
import type { DateOrders, Dialect, Snapshot } from '../tree/snapshot.js'
import type { CmsFacts } from './cms-facts.js'
import { localeOfWindows, type FetchProgress, type ListingWindows } from './fetch-tree.js'
import type { ListingExtras } from './listing-fields.js'
import type { SyncPlan } from './plan-sync.js'
import { isPageSizeRefusal } from './sync-error.js'
import { syncTree, type SyncedTree } from './sync-tree.js'
import type { UpstreamGet } from './upstream-port.js'

export interface FetchSyncDeps {
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly concurrency: number
  readonly pause: Pause
  readonly facts: CmsFacts
}

export interface FetchRequest {
  readonly plan: Pick<SyncPlan, 'requested' | 'inPlace'>
  /** Read every detail (the plan's mode, or a fall-back to full). */
  readonly full: boolean
  /**
   * Ask the CMS's page size and date orders again, as a full sync does (an operator may have
   * changed them): a paced walk does this once per `FULL_SYNC_INTERVAL`, no full sync doing it.
   */
  readonly relearn?: boolean
  /** The snapshot served now: what an incremental sync refreshes. */
  readonly previous: Snapshot | undefined
  /** The last pass's windows, when they describe `previous`. */
  readonly windows: ListingWindows | undefined
  readonly signal: AbortSignal
  readonly onProgress: (progress: FetchProgress) => void
}

export interface FetchedTree {
  readonly tree: SyncedTree
  readonly dialect: Dialect
  /** What the tree was read with, for a second read in the same sync (`readTree`). */
  readonly pageSize: number | null
  readonly withFields: ListingExtras | undefined
  readonly deriveUrls: boolean
}

export async function fetchSync(deps: FetchSyncDeps, request: FetchRequest): Promise<FetchedTree> {
  const { facts } = deps
  const relearn = request.full || request.relearn === true
  let pageSize = await facts.pageSize(relearn, request.signal)
  const withFields = await facts.listingFields(request.signal)
  const deriveUrls = await facts.derivesUrls(withFields, request.signal)
  let tree: SyncedTree
  try {
    tree = await readTree(deps, request, pageSize, withFields, deriveUrls)
  } catch (error) {
    // An incremental sync reuses the page size it last learned; a CMS whose maximum went down
    // since refuses it, and is asked again. A full sync has just asked.
    if (relearn || !isPageSizeRefusal(error)) throw error
    pageSize = await facts.probePageSize(request.signal)
    tree = await readTree(deps, request, pageSize, withFields, deriveUrls)
  }
  const dialect = await facts.dialect(tree.pages.at(0)?.id ?? 0, pageSize, request.signal)
  const dateOrders = await facts.dateOrders(tree.pages, relearn, request.signal)
  return { tree, dialect: dialectOfTree(dialect, tree, request.previous, dateOrders), pageSize, withFields, deriveUrls }
}

/**
 * The dialect a snapshot of `tree` records: the CMS's, with the language every page has when the
 * listing leaves `locale` out (`Dialect.unlistedLocale`), as the pass's windows show it (a refresh
 * in place keeps the previous snapshot's, having checked that the refreshed pages show it), and
 * the date fields each type is ordered by (`Dialect.dateOrders`).
 */
export function dialectOfTree(dialect: Dialect, tree: SyncedTree, previous: Snapshot | undefined, dateOrders: DateOrders | undefined): Dialect {
  const locale = tree.replaced !== undefined ? previous?.dialect.unlistedLocale : localeOfWindows(tree.listing.windows.values())
  const { unlistedLocale: _locale, dateOrders: _orders, ...rest } = dialect
  return { ...rest, ...(locale === undefined ? {} : { unlistedLocale: locale }), ...(dateOrders === undefined ? {} : { dateOrders }) }
}

/** One pass over the tree with what the CMS is already known to take. */
export function readTree(deps: FetchSyncDeps, request: FetchRequest, pageSize: number | null, withFields: ListingExtras | undefined, deriveUrls = false): Promise<SyncedTree> {
  return syncTree({
    get: deps.get,
    pagesPath: deps.pagesPath,
    rewriteUrl: deps.rewriteUrl,
    pageSize,
    concurrency: deps.concurrency,
    signal: request.signal,
    onProgress: request.onProgress,
    pause: deps.pause,
    previous: request.previous,
    full: request.full,
    requested: request.plan.requested,
    inPlace: request.plan.inPlace,
    withFields,
    deriveUrls,
    ...(request.windows !== undefined ? { windows: request.windows } : {}),
  })
}
