/**
 * What changed between two snapshots, page by page, and the surrogate keys a CDN must purge for
 * it (`change-keys.ts`).
 *
 * Wagtail's own purge (docs/wagtail-compatibility.md#what-wagtail-purges) covers only a published page's URL and detail URL: listings,
 * parents, moves, reorders and slug changes are never purged, so a CDN in front of it serves them
 * stale. Here the diff of the whole tree decides instead: an answer is purged exactly when its
 * bytes changed (docs/cdn-purging.md#the-keys).
 *
 * Cost, for a snapshot patched in place: what the replaced pages touch. Otherwise one pass over N
 * pages that skips, without a look-up, every page carried over unchanged (the same record at the
 * same place), plus O(k log k) per sibling group of k with a changed page in it, to tell moved
 * pages from the ones that merely stayed put.
 * @module
 */
import { changeKeys } from './change-keys.js'
import type { PageRecord, Snapshot } from './snapshot.js'
import { ALL_PAGES_KEY } from './surrogate-keys.js'

export interface TreeChange {
  /** In `next` only, in its tree order. */
  readonly added: readonly number[]
  /** In `previous` only, in its tree order. */
  readonly removed: readonly number[]
  /** In both, digest differs; in `next`'s tree order. */
  readonly changed: readonly number[]
  /**
   * In both, and the parent differs or the page changed place among its siblings; in `next`'s
   * tree order. For a reorder, the fewest pages that explain it (those off a longest run kept in
   * order), so moving one page among 100 siblings names that one page.
   */
  readonly moved: readonly number[]
  /**
   * Keys to purge, sorted and unique, empty when nothing changed: the inputs that changed
   * (`change-keys.ts`), and `cms-pages` when the CMS's dialect changed (everything may answer
   * differently).
   */
  readonly purgeKeys: readonly string[]
}

const NOTHING: TreeChange = Object.freeze({
  added: Object.freeze([]), removed: Object.freeze([]), changed: Object.freeze([]), moved: Object.freeze([]), purgeKeys: Object.freeze([]),
})

/**
 * Positions (into `values`) of one longest strictly increasing subsequence, O(k log k)
 * (patience sorting with back-links).
 */
function longestIncreasingRun(values: readonly number[]): Set<number> {
  const tails: number[] = [] // tails[l] = index of the smallest tail of an increasing run of length l + 1
  const previous = new Array<number>(values.length).fill(-1)
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!
    let lo = 0
    let hi = tails.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (values[tails[mid]!]! < value) lo = mid + 1
      else hi = mid
    }
    if (lo > 0) previous[i] = tails[lo - 1]!
    tails[lo] = i
  }
  const kept = new Set<number>()
  for (let i = tails.length > 0 ? tails[tails.length - 1]! : -1; i !== -1; i = previous[i]!) kept.add(i)
  return kept
}

/**
 * `page`'s record in `previous`. A page carried over unchanged keeps its very record at the same
 * place (`build-snapshot.ts`), which is found without a lookup by id.
 */
function recordBefore(previous: Snapshot, page: PageRecord): PageRecord | undefined {
  return previous.pages.at(page.order) === page ? page : previous.byId.get(page.id)
}

/** The pages without a parent (the site root, and orphans when the tree is not exact), in tree order. */
function roots(snapshot: Snapshot): PageRecord[] {
  const found: PageRecord[] = []
  for (const page of snapshot.pages) if (page.parentId === null) found.push(page)
  return found
}

/**
 * Pages that stayed under the same parent but changed place among the siblings that stayed too.
 * Tree order within one parent is sibling order, so each group is the prev positions of its
 * pages read in next order; whatever is off a longest increasing run moved.
 *
 * Only parents with a child that is not the very record it was at the same place are looked at:
 * siblings that all kept their records kept their places (`build-snapshot.ts` keeps a record only
 * at the same order), so an edit of one page reads its siblings, not the whole tree.
 */
function reordered(previous: Snapshot, next: Snapshot): Set<number> {
  const touched = new Set<number | null>()
  for (const page of next.pages) if (previous.pages.at(page.order) !== page) touched.add(page.parentId)
  const moved = new Set<number>()
  for (const parentId of touched) {
    const siblings = parentId === null ? roots(next) : next.childrenOf.get(parentId) ?? []
    const group: PageRecord[] = []
    let ordered = true
    for (const page of siblings) {
      const before = recordBefore(previous, page)
      if (before === undefined || before.parentId !== page.parentId) continue
      if (group.length > 0 && before.order < group[group.length - 1]!.order) ordered = false
      group.push(before)
    }
    if (ordered) continue
    const kept = longestIncreasingRun(group.map((page) => page.order))
    group.forEach((page, i) => {
      if (!kept.has(i)) moved.add(page.id)
    })
  }
  return moved
}

interface PageChanges {
  readonly added: number[]
  readonly removed: number[]
  readonly changed: number[]
  readonly moved: number[]
}

/**
 * The pages that came, went, changed or moved. A snapshot patched from `previous` (or from one
 * with the same fingerprint: the same pages at the same places) names the only pages that can
 * differ, so an edit of one page at 100,000 costs a look at that page, not a pass over all.
 */
function pageChanges(previous: Snapshot, next: Snapshot): PageChanges {
  if (next.patched !== undefined && next.patched.from === previous.fingerprint) {
    const changed = next.patched.ids
      .filter((id) => previous.byId.get(id)!.digest !== next.byId.get(id)!.digest)
      .sort((a, b) => next.byId.get(a)!.order - next.byId.get(b)!.order)
    return { added: [], removed: [], changed, moved: [] }
  }
  const added: number[] = []
  const removed: number[] = []
  const changed: number[] = []
  const moved: number[] = []
  const reorderedIds = reordered(previous, next)
  for (const page of next.pages) {
    const before = recordBefore(previous, page)
    if (before === page) {
      // The same record: same digest, same parent; only a sibling's move can have moved it.
      if (reorderedIds.has(page.id)) moved.push(page.id)
      continue
    }
    if (before === undefined) {
      added.push(page.id)
      continue
    }
    if (before.digest !== page.digest) {
      changed.push(page.id)
    }
    if (before.parentId !== page.parentId || reorderedIds.has(page.id)) moved.push(page.id)
  }
  // Ids are unique: as many pages as before and none added means none removed either.
  if (added.length > 0 || previous.pages.length !== next.pages.length) {
    for (const page of previous.pages) if (!next.byId.has(page.id)) removed.push(page.id)
  }
  return { added, removed, changed, moved }
}

/**
 * Compares two snapshots page by page. `previous` undefined (the first snapshot) → every page
 * added and `purgeKeys` `['cms-pages']`. Equal fingerprints → nothing changed.
 */
export function diffSnapshots(previous: Snapshot | undefined, next: Snapshot): TreeChange {
  if (previous === undefined) {
    return Object.freeze({ ...NOTHING, added: Object.freeze(Array.from(next.pages, (page) => page.id)), purgeKeys: Object.freeze([ALL_PAGES_KEY]) })
  }
  if (previous === next || previous.fingerprint === next.fingerprint) return NOTHING

  const { added, removed, changed, moved } = pageChanges(previous, next)

  const keys = changeKeys(previous, next, { added, removed, changed, moved })
  if (JSON.stringify(previous.dialect) !== JSON.stringify(next.dialect)) keys.add(ALL_PAGES_KEY)

  return Object.freeze({
    added: Object.freeze(added),
    removed: Object.freeze(removed),
    changed: Object.freeze(changed),
    moved: Object.freeze(moved),
    purgeKeys: Object.freeze([...keys].sort()),
  })
}
