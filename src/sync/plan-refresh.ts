/**
 * Decides which details an incremental sync fetches again, from the previous snapshot and a fresh
 * listing pass (docs/architecture.md#decisions, "Cheap change detection"). The listing shows new, removed, renamed,
 * re-slugged, moved (a move changes `html_url`, which is the slug path, read or derived) and re-flagged pages; a
 * detail also embeds facts about *other* pages, so some unchanged items are fetched too:
 *
 * - a page's detail embeds its parent (`meta.parent`: id, type, html_url, title; docs/wagtail-compatibility.md#response-bodies), so
 *   when a page's item changed, its children are fetched again;
 * - `meta.parent` is `null` when the parent is not visible (docs/wagtail-compatibility.md#response-bodies), so the children of a
 *   removed page are fetched again, and so is every parentless page when a page appears (an
 *   unpublished parent may have come back);
 * - a page with no URL (`html_url` null, outside every site) shows a move only by its place in
 *   tree order, so such a page is fetched again when its predecessor in the listing changed (a
 *   walk that reads the listing without `html_url` does that for every page first:
 *   `walk-without-urls.ts`).
 *
 * Body-only edits show in no listing: PURGE, the webhook and the periodic full sync cover them.
 * Pure: no I/O.
 * @module
 */
import { inSlices, runToEnd, runWithPauses, type Pause, type Steps } from '../tree/slices.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { ListedFields } from './read-page-fields.js'

export interface ListedPage extends ListedFields {
  /** The default listing item's text (`detail_url`s rewritten), as the snapshot keeps it. */
  readonly listItem: string
}

export interface RefreshPlan {
  /** Pages whose detail is fetched again, in listing order. */
  readonly fetch: readonly ListedPage[]
  /** Pages of the previous snapshot that the listing no longer holds. */
  readonly removed: readonly number[]
  /** Counts by reason, for logs and metrics (a page counts once, under its first reason). */
  readonly reasons: Readonly<Record<RefreshReason, number>>
}

export type RefreshReason = 'new' | 'changed' | 'requested' | 'parent-changed' | 'parent-removed' | 'parent-restored' | 'reordered'

function itemChanged(listed: ListedPage, previous: Snapshot): boolean {
  const record = previous.byId.get(listed.id)!
  if (record.listItem !== listed.listItem) return true
  const flags = listed.flags
  return flags !== undefined &&
    (flags.showInMenus !== record.showInMenus || flags.seoTitle !== record.seoTitle || flags.searchDescription !== record.searchDescription)
}

export function planRefresh(previous: Snapshot, listed: readonly ListedPage[], requested: ReadonlySet<number>): RefreshPlan {
  return runToEnd(planSteps(previous, listed, requested))
}

/** {@link planRefresh}, giving the event loop back between slices of pages (`slices.ts`). */
export function planRefreshInSlices(previous: Snapshot, listed: readonly ListedPage[], requested: ReadonlySet<number>, pause: Pause): Promise<RefreshPlan> {
  return runWithPauses(planSteps(previous, listed, requested), pause)
}

function* planSteps(previous: Snapshot, listed: readonly ListedPage[], requested: ReadonlySet<number>): Steps<RefreshPlan> {
  const reasons: Record<RefreshReason, number> = {
    new: 0, changed: 0, requested: 0, 'parent-changed': 0, 'parent-removed': 0, 'parent-restored': 0, reordered: 0,
  }
  const why = new Map<number, RefreshReason>()
  const mark = (id: number, reason: RefreshReason) => {
    if (why.has(id)) return
    why.set(id, reason)
    reasons[reason]++
  }
  const listedIds = new Set<number>()
  const childrenOfChanged: number[] = []
  let anyNew = false

  yield* inSlices(listed.length, (from, to) => {
    for (let i = from; i < to; i++) {
      const page = listed[i]!
      listedIds.add(page.id)
      const record = previous.byId.get(page.id)
      if (!record) {
        mark(page.id, 'new')
        anyNew = true
        continue
      }
      if (requested.has(page.id)) mark(page.id, 'requested')
      if (itemChanged(page, previous)) {
        mark(page.id, 'changed')
        if (page.listItem !== record.listItem) childrenOfChanged.push(page.id)
      }
      if (page.htmlUrl === null) {
        const before = record.order === 0 ? undefined : previous.pages.at(record.order - 1)!.id
        if (before !== (i === 0 ? undefined : listed[i - 1]!.id)) mark(page.id, 'reordered')
      }
    }
  })

  const markChildren = (parentId: number, reason: RefreshReason) => {
    for (const child of previous.childrenOf.get(parentId) ?? []) if (listedIds.has(child.id)) mark(child.id, reason)
  }
  for (const id of childrenOfChanged) markChildren(id, 'parent-changed')
  const removed: number[] = []
  yield* inSlices(previous.pages.length, (from, to) => {
    for (let i = from; i < to; i++) {
      const record = previous.pages.at(i)!
      if (!listedIds.has(record.id)) removed.push(record.id)
      else if (anyNew && record.parentId === null && record.order > 0) mark(record.id, 'parent-restored')
    }
  })
  for (const id of removed) markChildren(id, 'parent-removed')

  const fetch: ListedPage[] = []
  if (why.size > 0) {
    yield* inSlices(listed.length, (from, to) => {
      for (let i = from; i < to; i++) if (why.has(listed[i]!.id)) fetch.push(listed[i]!)
    })
  }
  return { fetch, removed, reasons }
}
