/**
 * An incremental walk that reads the listing without `html_url` (docs/architecture.md#decisions,
 * "Listing without html_url"): the CMS spends most of a listing item's time on that one field.
 * Each page's URL is derived from its parent's (`derive-urls.ts`) and written back into its item
 * (`html-url-item.ts`), so the items, and everything served from them, are the CMS's byte for byte.
 *
 * The parents are the previous snapshot's, except where the walk shows they may have changed: a
 * new page, and a page whose predecessor in the listing changed (the listing is in tree order, so
 * a move shows as a new place), have their details read first, and those name their parents.
 * With the URLs derived, the walk goes on as one with `html_url` does (`plan-refresh.ts`): a page
 * whose item changed (a slug, a move, a parent's new slug) is read again, with its children. A
 * detail read there that names another parent than assumed (a move that kept its predecessor), or
 * shows an anchor's new URL (`url-anchors.ts`), derives again, a bounded number of rounds.
 *
 * Anything the derivation cannot place for certain gives up (`undefined`), and the sync reads the
 * listing with `html_url` as it would without derivation: a page whose parent is not listed (a
 * new root, a parent unpublished), a detail whose URL is not the derived one (unless its type's
 * URLs are known to differ between detail and listing), too many rounds.
 * @module
 */
import { pageDigest } from '../tree/build-snapshot.js'
import { inSlices, runToEnd, runWithPauses, type Steps } from '../tree/slices.js'
import type { Snapshot } from '../tree/snapshot.js'
import { UrlDeriver } from './derive-urls.js'
import { fetchDetails, fetchListingPass, type FetchTreeOptions, type FetchedPage, type ListingPass, type ListingWindows } from './fetch-tree.js'
import { withHtmlUrl } from './html-url-item.js'
import type { ListingExtras } from './listing-fields.js'
import { planRefresh, planRefreshInSlices, type ListedPage, type RefreshPlan, type RefreshReason } from './plan-refresh.js'
import { anchorsOf } from './url-anchors.js'

/** Rounds of reading details that name other parents than assumed before the walk gives up. */
const MAX_ROUNDS = 4

export interface WalkOptions extends FetchTreeOptions {
  readonly previous: Snapshot
  readonly requested: ReadonlySet<number>
  readonly withFields: ListingExtras | undefined
  readonly windows?: ListingWindows
}

export interface Walk {
  /** The pass, its pages' items with their URLs written back. */
  readonly listing: ListingPass
  readonly fetched: readonly FetchedPage[]
  readonly reasons: Readonly<Record<RefreshReason, number>>
  readonly removed: number
  /** Every window what the previous snapshot was built from, and nothing requested. */
  readonly unchanged: boolean
}

/** Pages whose parent the walk cannot take from the previous snapshot: new, or in a new place. */
function newlyPlaced(previous: Snapshot, listed: readonly ListedPage[], requested: ReadonlySet<number>): ListedPage[] {
  const pages: ListedPage[] = []
  for (const [i, page] of listed.entries()) {
    const record = previous.byId.get(page.id)
    const before = record === undefined || record.order === 0 ? undefined : previous.pages.at(record.order - 1)!.id
    const now = i === 0 ? undefined : listed[i - 1]!.id
    if (record === undefined || before !== now || requested.has(page.id)) pages.push(page)
  }
  return pages
}

/** Types some page of which shows another URL in its typed listing than in the untyped one. */
function typesWithOwnUrls(previous: Snapshot): Set<string> {
  const types = new Set<string>()
  for (const record of previous.pages) if (record.typedListItem !== undefined) types.add(record.type)
  return types
}

/** The pages with their derived URLs written back; `undefined` when one does not derive. */
function* placeSteps(listed: readonly ListedPage[], parents: ReadonlyMap<number, number | null>, anchors: ReadonlyMap<number, string | null>): Steps<ListedPage[] | undefined> {
  const deriver = new UrlDeriver(anchors)
  const placed: ListedPage[] = []
  let placing = true
  yield* inSlices(listed.length, (from, to) => {
    for (let i = from; placing && i < to; i++) {
      const page = listed[i]!
      const url = deriver.add({ id: page.id, slug: page.slug, parentId: parents.get(page.id) ?? null })
      if (url === undefined) {
        placing = false
        break
      }
      // A page with a URL was placed by an earlier walk (an item read without it has none): its item has it.
      if (url !== null && page.htmlUrl === url) {
        placed.push(page)
        continue
      }
      const listItem = withHtmlUrl(page.listItem, url)
      if (listItem === undefined) placing = false
      else placed.push(page.htmlUrl === url && listItem === page.listItem ? page : { ...page, htmlUrl: url, listItem })
    }
  })
  return placing ? placed : undefined
}

/** The pass with `placed` in place of its pages, window by window. */
function withPlaced(pass: ListingPass, placed: readonly ListedPage[]): ListingPass {
  const byId = new Map(placed.map((page) => [page.id, page]))
  const windows = new Map([...pass.windows].map(([path, window]) => [path, { ...window, pages: window.pages.map((page) => byId.get(page.id)!) }]))
  return { pages: [...placed], windows, reused: pass.reused }
}

/** A fetched page with the item of its place (its URL written back), and whether its detail shows another URL. */
function settled(fetched: FetchedPage, listed: ListedPage): FetchedPage {
  const page = fetched.page.listItem === listed.listItem ? fetched.page : { ...fetched.page, listItem: listed.listItem, digest: pageDigest(listed.listItem, undefined, fetched.page.detail) }
  return { page, urlDiffers: fetched.htmlUrl !== listed.htmlUrl, htmlUrl: fetched.htmlUrl }
}

/** What the walk takes a page's place to be: its parent, and the anchors' URLs. */
interface Places {
  readonly parents: Map<number, number | null>
  readonly anchors: Map<number, string | null>
  /** Types whose details show their own URLs (`typesWithOwnUrls`), worked out when first asked. */
  readonly ownUrls: () => ReadonlySet<string>
}

/**
 * Takes what a fetched detail tells of its page's place: its parent, and for an anchor its URL (a
 * Site root read again brings its Site's root URL now), unless its model shows its own. Whether
 * either differed from what the walk assumed.
 */
function learnFromDetail(each: FetchedPage, places: Places): boolean {
  const { id, parentId, type } = each.page
  let changed = false
  if (places.parents.get(id) !== parentId) {
    places.parents.set(id, parentId)
    changed = true
  }
  if (places.anchors.has(id) && places.anchors.get(id) !== each.htmlUrl && !places.ownUrls().has(type)) {
    places.anchors.set(id, each.htmlUrl)
    changed = true
  }
  return changed
}

interface Settled {
  readonly placed: ListedPage[]
  readonly plan: RefreshPlan
  readonly fetched: ReadonlyMap<number, FetchedPage>
}

/**
 * Reads the details of `first`, places every page, plans, and reads what the plan asks for, again
 * while the details read name other places than assumed; `undefined` when a page cannot be placed
 * or the rounds run out.
 */
async function settle(options: WalkOptions, pass: ListingPass, places: Places, first: readonly ListedPage[]): Promise<Settled | undefined> {
  const fetched = new Map<number, FetchedPage>()
  let toFetch = first
  let placed: ListedPage[] | undefined
  let plan: RefreshPlan | undefined
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let moved = false
    for (const each of await fetchDetails(options, toFetch)) {
      fetched.set(each.page.id, each)
      moved = learnFromDetail(each, places) || moved
    }
    // Every place as assumed: the plan made over these places stands, and its pages are read.
    if (placed !== undefined && plan !== undefined && !moved) return { placed, plan, fetched }
    const steps = placeSteps(pass.pages, places.parents, places.anchors)
    placed = options.pause ? await runWithPauses(steps, options.pause) : runToEnd(steps)
    if (placed === undefined) return undefined
    plan = options.pause ? await planRefreshInSlices(options.previous, placed, options.requested, options.pause) : planRefresh(options.previous, placed, options.requested)
    toFetch = plan.fetch.filter((page) => !fetched.has(page.id))
    if (toFetch.length === 0) return { placed, plan, fetched }
  }
  return undefined
}

export async function walkWithoutUrls(options: WalkOptions): Promise<Walk | undefined> {
  const { previous } = options
  const anchors = await anchorsOf(previous, options.pause)
  if (anchors === undefined) return undefined
  const pass = await fetchListingPass(options, { withFields: options.withFields, withoutUrl: true, ...(options.windows ? { reuse: options.windows } : {}) })
  if (options.requested.size === 0 && pass.reused.size === pass.windows.size && pass.pages.length === previous.pages.length) {
    // Every window is one the previous snapshot was built from, placed then: so are its items now.
    return { listing: pass, fetched: [], reasons: planRefresh(previous, [], new Set()).reasons, removed: 0, unchanged: true }
  }

  let ownUrls: ReadonlySet<string> | undefined
  const places: Places = { parents: new Map(), anchors: new Map(anchors), ownUrls: () => (ownUrls ??= typesWithOwnUrls(previous)) }
  for (const page of pass.pages) places.parents.set(page.id, previous.byId.get(page.id)?.parentId ?? null)
  const reordered = newlyPlaced(previous, pass.pages, options.requested)
  const settledWalk = await settle(options, pass, places, reordered)
  if (settledWalk === undefined) return undefined
  const { placed, plan, fetched } = settledWalk

  const placedById = new Map(placed.map((page) => [page.id, page]))
  const pages: FetchedPage[] = []
  for (const each of fetched.values()) {
    const page = settled(each, placedById.get(each.page.id)!)
    // A detail whose URL is not the derived one: the derivation is wrong, unless the type's model shows its own.
    if (page.urlDiffers && !places.ownUrls().has(page.page.type)) return undefined
    pages.push(page)
  }
  const planned = new Set(plan.fetch.map((page) => page.id))
  const reasons = { ...plan.reasons, reordered: plan.reasons.reordered + reordered.filter((page) => !planned.has(page.id)).length }
  return { listing: withPlaced(pass, placed), fetched: pages, reasons, removed: plan.removed.length, unchanged: false }
}
