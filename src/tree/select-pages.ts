/**
 * Answers a page selection from the snapshot, in tree order (the CMS's default order, docs/wagtail-compatibility.md#pagination-and-default-order).
 * @module
 */
import type { PageFilters, PageOrder, PageSelection } from './page-selection.js'
import { dateFieldMicros } from './page-dates.js'
import { localeOf, publishedMicrosOf } from './page-meta.js'
import { translationsOf } from './translations.js'
import type { PageRecord, Snapshot } from './snapshot.js'

function matchesFilters(page: PageRecord, filters: PageFilters): boolean {
  return (
    (filters.id === undefined || page.id === filters.id) &&
    (filters.title === undefined || page.title === filters.title) &&
    (filters.slug === undefined || page.slug === filters.slug) &&
    (filters.seoTitle === undefined || page.seoTitle === filters.seoTitle) &&
    (filters.searchDescription === undefined || page.searchDescription === filters.searchDescription) &&
    (filters.showInMenus === undefined || page.showInMenus === filters.showInMenus)
  )
}

const isWithin = (page: PageRecord, ancestor: PageRecord) => page.order > ancestor.order && page.order < ancestor.subtreeEnd

/** Whether one page passes every part of the selection (the detail view's filter backends). */
export function matchesSelection(snapshot: Snapshot, page: PageRecord, selection: PageSelection): boolean {
  if (selection.types !== null && !selection.types.has(page.type)) return false
  if (!matchesFilters(page, selection.filters)) return false
  if (selection.childOf !== undefined && page.parentId !== selection.childOf) return false
  if (selection.descendantOf !== undefined && !isWithin(page, snapshot.byId.get(selection.descendantOf)!)) return false
  if (selection.ancestorOf !== undefined && !isWithin(snapshot.byId.get(selection.ancestorOf)!, page)) return false
  if (selection.locale !== undefined && localeOf(page) !== selection.locale) return false
  if (selection.translationOf !== undefined && !translationsOf(snapshot)?.isTranslation(selection.translationOf, page.id)) return false
  return true
}

/** The smallest tree-ordered candidate list the selection allows, before filtering. */
function candidates(snapshot: Snapshot, selection: PageSelection): Iterable<PageRecord> {
  if (selection.childOf !== undefined) return snapshot.childrenOf.get(selection.childOf) ?? []
  if (selection.ancestorOf !== undefined) {
    const chain: PageRecord[] = []
    let parentId = snapshot.byId.get(selection.ancestorOf)!.parentId
    while (parentId !== null) {
      const parent = snapshot.byId.get(parentId)!
      chain.push(parent)
      parentId = parent.parentId
    }
    return chain.reverse()
  }
  if (selection.descendantOf !== undefined) {
    const ancestor = snapshot.byId.get(selection.descendantOf)!
    return snapshot.pages.slice(ancestor.order + 1, ancestor.subtreeEnd)
  }
  if (selection.translationOf !== undefined) {
    const translations = (translationsOf(snapshot)?.translationsOf(selection.translationOf) ?? []).flatMap((id) => snapshot.byId.get(id) ?? [])
    return translations.sort((a, b) => a.order - b.order)
  }
  return snapshot.pages
}

/** The selected pages, in tree order or in `order` when given. */
export function selectPages(snapshot: Snapshot, selection: PageSelection & { readonly order?: PageOrder }): readonly PageRecord[] {
  const selected: PageRecord[] = []
  for (const page of candidates(snapshot, selection)) if (matchesSelection(snapshot, page, selection)) selected.push(page)
  return selection.order === undefined ? selected : ordered(selected, selection.order)
}

/** The sort key of a page; `null` when it has none (a page never published, a date left empty). */
function keyOf(page: PageRecord, order: PageOrder): number | null {
  if (order.kind !== undefined) return dateFieldMicros(page, order.field, order.kind)
  return order.field === 'id' ? page.id : publishedMicrosOf(page)
}

function ordered(pages: PageRecord[], order: PageOrder): PageRecord[] {
  const sign = order.descending ? -1 : 1
  return pages.sort((a, b) => sign * (keyOf(a, order)! - keyOf(b, order)!))
}

/**
 * Whether `order` decides the order of `pages` alone: every page has a key and no two share one.
 * Otherwise the database decides between equals (and where a page without one goes), and only
 * the CMS can say how.
 */
export function orderIsTotal(pages: readonly PageRecord[], order: PageOrder): boolean {
  if (order.field === 'id' && order.kind === undefined) return true
  const seen = new Set<number>()
  for (const page of pages) {
    const key = keyOf(page, order)
    if (key === null || seen.has(key)) return false
    seen.add(key)
  }
  return true
}
