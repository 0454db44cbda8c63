/**
 * The surrogate keys each answer carries: the names (`surrogate-keys.ts`) of exactly the inputs
 * its bytes are made of, so that `change-keys.ts` can purge an answer when, and only when, one of
 * them changed (docs/cdn-purging.md#the-keys).
 *
 * - A detail is its page's stored detail: its own record, its parent as `meta.parent` shows it
 *   (type, title) and the places of the pages above it (its `html_url`, the parent's).
 * - A list is which pages its scope holds, the fields it filters or orders on, and the items it
 *   shows (listing items, or with `?fields=` the stored details' members), whose `html_url`s
 *   depend on the places of the pages above them. A list of the chain
 *   above a page (`ancestor_of`) names each page of that chain, a handful at most.
 * - `find/` redirects by a page's path: that page and the places above it.
 * - A 404 for an absent id carries the id's detail key, which the page's creation purges.
 *
 * Pure; callers keep the result with the body it belongs to (one per snapshot and answer).
 * @module
 */
import type { ListQuery } from './page-selection.js'
import type { PageRecord, Snapshot } from './snapshot.js'
import {
  ALL_PAGES_KEY, KEY_HEADER_MAX_BYTES, ancestorsKey, existsKey, LIST_SCOPE, READ_KEY, fieldKey, fieldsKey, headerLength, itemKey, itemsKey, membershipKey,
  metaKey, pageKey, pathKey, summaryKey, type FilterField, type KeyScope, type Narrowing,
} from './surrogate-keys.js'

/** Calls `visit` with the page and every page above it, nearest first, while `visit` returns true. */
function walkUp(snapshot: Snapshot, page: PageRecord, visit: (page: PageRecord) => boolean): void {
  for (let current: PageRecord | undefined = page; current !== undefined && visit(current); ) {
    current = current.parentId === null ? undefined : snapshot.byId.get(current.parentId)
  }
}

/** `cms-path-<id>` of the page and of every page above it. */
function pathKeysUpFrom(snapshot: Snapshot, page: PageRecord, into: string[]): void {
  walkUp(snapshot, page, (current) => {
    into.push(pathKey(current.id))
    return true
  })
}

/** A detail: the page, its parent's summary, and the places of the page and every page above it. */
export function detailKeys(snapshot: Snapshot, page: PageRecord): readonly string[] {
  const keys = [ALL_PAGES_KEY, pageKey(page.id)]
  if (page.parentId !== null && snapshot.byId.has(page.parentId)) keys.push(summaryKey(page.parentId))
  pathKeysUpFrom(snapshot, page, keys)
  return Object.freeze(keys)
}

/** The 404 of a detail whose id no page has: the creation of that page purges it. */
export function absentDetailKeys(id: number): readonly string[] {
  return Object.freeze([ALL_PAGES_KEY, pageKey(id)])
}

/**
 * A `find/` redirect to `page`: its place, and with `type=` its own item (its type decides).
 * @param typed whether the query names a type.
 */
export function findKeys(snapshot: Snapshot, page: PageRecord, typed: boolean): readonly string[] {
  const keys = typed ? [ALL_PAGES_KEY, itemKey(page.id)] : [ALL_PAGES_KEY]
  pathKeysUpFrom(snapshot, page, keys)
  return Object.freeze(keys)
}

/**
 * A `find/` 404 answered here (a page of another type, an id no page has): any page that comes,
 * moves, changes type (membership of the tree) or changes slug may answer it.
 */
export const ABSENT_FIND_KEYS: readonly string[] = Object.freeze([ALL_PAGES_KEY, membershipKey(LIST_SCOPE), fieldKey(LIST_SCOPE, 'slug')])

/** An answer read through from the CMS (search, text order, …): whatever changes may change it. */
export const READ_THROUGH_KEYS: readonly string[] = Object.freeze([ALL_PAGES_KEY, READ_KEY])

/** A stored detail's members every page type has; the others are `cms-fields-`'s. */
export const GENERIC_MEMBERS: ReadonlySet<string> = new Set(['id', 'title', 'meta'])

/** The fields a list's filters and order read, by their API names. */
function filteredFields(query: ListQuery): FilterField[] {
  const fields: FilterField[] = []
  const f = query.filters
  if (f.title !== undefined) fields.push('title')
  if (f.slug !== undefined) fields.push('slug')
  if (f.seoTitle !== undefined) fields.push('seo_title')
  if (f.searchDescription !== undefined) fields.push('search_description')
  if (f.showInMenus !== undefined) fields.push('show_in_menus')
  if (query.locale !== undefined) fields.push('locale')
  if (query.order?.field === 'first_published_at') fields.push('first_published_at')
  return fields
}

/**
 * The membership a list's filters narrow it to: one type's pages, else one `show_in_menus`
 * value's; several types, or none, the whole scope's (their interleaving is the scope's order).
 */
function narrowingOf(query: ListQuery): Narrowing {
  if (query.types !== null && query.types.size === 1) return { type: [...query.types][0]! }
  if (query.filters.showInMenus !== undefined) return { menus: query.filters.showInMenus }
  return undefined
}

/** The one tree filter of a list, when it has exactly one naming a page of the snapshot. */
function treeFilter(snapshot: Snapshot, query: ListQuery): { kind: 'children' | 'descendants' | 'ancestors'; page: PageRecord } | undefined {
  const set = [
    ['children', query.childOf], ['descendants', query.descendantOf], ['ancestors', query.ancestorOf],
  ].filter(([, id]) => id !== undefined) as Array<['children' | 'descendants' | 'ancestors', number]>
  if (set.length !== 1) return undefined
  const page = snapshot.byId.get(set[0]![1])
  return page === undefined ? undefined : { kind: set[0]![0], page }
}

/**
 * `ancestor_of=<id>`: the chain above the page is its membership (the page's parent, and the
 * places of every page above it) and each page of the chain is shown or filtered out by its own
 * item (and, with filters, an order or `?fields=`, by the rest of its fields): a few keys a level.
 */
function ancestorsListKeys(snapshot: Snapshot, query: ListQuery, page: PageRecord): readonly string[] {
  const keys = [ALL_PAGES_KEY, ancestorsKey(page.id)]
  const readsFields = query.fields !== undefined || query.order !== undefined || filteredFields(query).length > 0
  walkUp(snapshot, page, (current) => {
    if (current !== page) {
      keys.push(pathKey(current.id), itemKey(current.id))
      if (readsFields) keys.push(metaKey(current.id), fieldsKey(current.id))
    }
    return true
  })
  return Object.freeze(keys)
}

/**
 * A list's keys: its scope's membership, the fields it filters or orders on, the places of its
 * scope's page and the pages above it, and for each item shown, its item (its fields with
 * `?fields=`) and the places between it and the scope. When naming every item would pass
 * {@link KEY_HEADER_MAX_BYTES}, the items are named by the scope's `-items` key instead.
 * @param shown the pages whose items the body shows.
 */
export function listKeys(snapshot: Snapshot, query: ListQuery, shown: readonly PageRecord[]): readonly string[] {
  const filter = treeFilter(snapshot, query)
  if (filter?.kind === 'ancestors') return ancestorsListKeys(snapshot, query, filter.page)
  const scope: KeyScope = filter === undefined ? LIST_SCOPE : { kind: filter.kind, id: filter.page.id }
  const base = [ALL_PAGES_KEY, membershipKey(scope, narrowingOf(query))]
  for (const field of filteredFields(query)) base.push(fieldKey(scope, field))
  const named = new Set<number>()
  // A list that shows no item shows no address: only the removal of its page changes it.
  if (filter !== undefined && shown.length === 0) base.push(existsKey(filter.page.id))
  else if (filter !== undefined) {
    walkUp(snapshot, filter.page, (current) => {
      named.add(current.id)
      base.push(pathKey(current.id))
      return true
    })
  }
  const members: string[] = []
  // With `?fields=`, an item is made of the stored detail (and the listing's `html_url`): its
  // generic members, and the page type's own when the selection names any.
  const typeFields = query.fields !== undefined && query.fields.body.some((name) => !GENERIC_MEMBERS.has(name))
  for (const page of shown) {
    if (query.fields === undefined) members.push(itemKey(page.id))
    else members.push(metaKey(page.id), ...(typeFields ? [fieldsKey(page.id)] : []))
    const parent = page.parentId === null ? undefined : snapshot.byId.get(page.parentId)
    if (parent === undefined) continue
    walkUp(snapshot, parent, (current) => {
      if (named.has(current.id)) return false
      named.add(current.id)
      members.push(pathKey(current.id))
      return true
    })
  }
  if (headerLength(base) + 1 + headerLength(members) > KEY_HEADER_MAX_BYTES) base.push(itemsKey(scope))
  else base.push(...members)
  return Object.freeze(base)
}
