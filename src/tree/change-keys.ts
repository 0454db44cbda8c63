/**
 * The keys a CDN must purge for the difference between two snapshots: the names of the inputs
 * (`surrogate-keys.ts`) that changed, so that an answer (`answer-keys.ts`) is purged when its
 * bytes changed and kept when they did not (docs/cdn-purging.md#what-each-change-purges).
 *
 * The keys an answer carries are those of the snapshot it was made from, so inputs are read in
 * the previous tree; membership is read in both (a page that moved left one scope and entered
 * another). A change below a page whose place changed is already purged through that page's
 * `cms-path-` key, which every answer showing a page below it carries: such a change adds no key
 * of its own, so a move of a subtree costs a few keys, not one per page. Cost: what changed,
 * times the depth of the tree.
 * @module
 */
import { getPath, parseJsonSpans } from '../json/json-spans.js'
import { GENERIC_MEMBERS } from './answer-keys.js'
import { bytesOf, type DetailBody } from './detail-body.js'
import { htmlUrlOf, localeOf, publishedMicrosOf } from './page-meta.js'
import type { PageRecord, Snapshot } from './snapshot.js'
import {
  LIST_SCOPE, READ_KEY, ancestorsKey, existsKey, fieldKey, fieldsKey, itemKey, itemsKey, membershipKey, metaKey, pageKey, pathKey, summaryKey,
  type FilterField, type KeyScope, type Narrowing,
} from './surrogate-keys.js'

/** The pages a tree diff found; ids in the tree order of the snapshot they are in. */
export interface PageChangeSets {
  readonly added: readonly number[]
  readonly removed: readonly number[]
  /** In both snapshots, with another digest. */
  readonly changed: readonly number[]
  /** In both, under another parent or at another place among their siblings. */
  readonly moved: readonly number[]
}

const FIELD_VALUES: ReadonlyArray<readonly [FilterField, (page: PageRecord) => unknown]> = [
  ['title', (page) => page.title],
  ['slug', (page) => page.slug],
  ['seo_title', (page) => page.seoTitle],
  ['search_description', (page) => page.searchDescription],
  ['show_in_menus', (page) => page.showInMenus],
  ['locale', localeOf],
  ['first_published_at', publishedMicrosOf],
]

/**
 * What a listing's `?fields=` may show of a stored detail, in two parts: its generic members (`id`,
 * `title`, `meta` without `meta.parent`) and the page type's own.
 */
function listedParts(detail: DetailBody): { generic: string; own: string } {
  const text = bytesOf(detail).toString('utf8')
  const root = parseJsonSpans(text)
  if (root.kind !== 'object') return { generic: text, own: text }
  let generic = ''
  let own = ''
  for (const entry of root.entries) {
    let value = text.slice(entry.value.start, entry.value.end)
    if (entry.key === 'meta') {
      const parent = getPath(entry.value, ['parent'])
      if (parent !== undefined) value = text.slice(entry.value.start, parent.start) + text.slice(parent.end, entry.value.end)
    }
    if (GENERIC_MEMBERS.has(entry.key)) generic += `${JSON.stringify(entry.key)}:${value}\n`
    else own += `${JSON.stringify(entry.key)}:${value}\n`
  }
  return { generic, own }
}

/** One page of each type and of each `show_in_menus` value of the snapshot, once per snapshot. */
const representativesOf = new WeakMap<Snapshot, readonly PageRecord[]>()
function representatives(snapshot: Snapshot): readonly PageRecord[] {
  let found = representativesOf.get(snapshot)
  if (found === undefined) {
    const byValue = new Map<string, PageRecord>()
    for (const page of snapshot.pages) {
      if (!byValue.has(`type ${page.type}`)) byValue.set(`type ${page.type}`, page)
      if (!byValue.has(`menus ${page.showInMenus}`)) byValue.set(`menus ${page.showInMenus}`, page)
    }
    representativesOf.set(snapshot, (found = [...byValue.values()]))
  }
  return found
}

/** Adds a scope key for every scope a page lies in, once per tree and kind of key. */
class ScopeKeys {
  private readonly walked = new Map<string, Set<number>>()
  constructor(private readonly keys: Set<string>) {}

  /**
   * `keyOf` of the page's parent's children, of every page above it's descendants, and of the
   * whole list; of the first alone (`children`) or of the others alone (`above`) when asked.
   */
  add(snapshot: Snapshot, tree: string, page: PageRecord, kind: string, keyOf: (scope: KeyScope) => string, only?: 'children' | 'above'): void {
    if (only !== 'above' && page.parentId !== null) this.keys.add(keyOf({ kind: 'children', id: page.parentId }))
    if (only === 'children') return
    this.keys.add(keyOf(LIST_SCOPE))
    if (page.parentId === null) return
    let walked = this.walked.get(`${tree}\u0000${kind}`)
    if (walked === undefined) this.walked.set(`${tree}\u0000${kind}`, (walked = new Set()))
    for (let id: number | null = page.parentId; id !== null && !walked.has(id); ) {
      walked.add(id)
      this.keys.add(keyOf({ kind: 'descendants', id }))
      id = snapshot.byId.get(id)?.parentId ?? null
    }
  }
}

/** What the steps below share: both trees, the keys so far, and the pages whose place changed. */
interface Purge {
  readonly previous: Snapshot
  readonly next: Snapshot
  readonly keys: Set<string>
  readonly scopes: ScopeKeys
  /** Pages whose `cms-path-` key is purged. */
  readonly placed: Set<number>
}

const byPreviousOrder = (previous: Snapshot, ids: Iterable<number>) =>
  [...ids].sort((a, b) => previous.byId.get(a)!.order - previous.byId.get(b)!.order)

/** The highest page above `page` (in the previous tree) whose place changed, if any. */
function placedAbove(purge: Purge, page: PageRecord): PageRecord | undefined {
  let top: PageRecord | undefined
  for (let id = page.parentId; id !== null; ) {
    const above = purge.previous.byId.get(id)
    if (above === undefined) break
    if (purge.placed.has(id)) top = above
    id = above.parentId
  }
  return top
}

/**
 * Places: a page removed, under another parent, or at another address. Top-down, so that a page
 * below one already named is left to it. And the lists of the scopes of a page that went, which
 * fail now: each page's own key, since a list that shows no item keeps its bytes, and so its
 * keys, through a move of the pages above it.
 */
function purgePlaces(purge: Purge, changes: PageChangeSets): void {
  const { previous, next, keys, placed } = purge
  for (const id of byPreviousOrder(previous, new Set([...changes.removed, ...changes.changed, ...changes.moved]))) {
    const old = previous.byId.get(id)!
    if (placedAbove(purge, old) !== undefined) continue
    const now = next.byId.get(id)
    if (now === undefined || now.parentId !== old.parentId || htmlUrlOf(now) !== htmlUrlOf(old)) {
      placed.add(id)
      keys.add(pathKey(id))
    }
    // Its own `ancestor_of` list holds another chain.
    if (now === undefined || now.parentId !== old.parentId) keys.add(ancestorsKey(id))
  }
  for (const id of changes.removed) keys.add(existsKey(id))
}

/**
 * Membership: pages that came, went or moved (with every page below them), and pages of another
 * type, in both trees; for each, its scopes' membership as a whole and narrowed to its type and
 * its `show_in_menus` value. A page below one that came or went is its top page's.
 */
function purgeMembership(purge: Purge, changes: PageChangeSets): void {
  const { previous, next, scopes } = purge
  const typeChanged = changes.changed.filter((id) => previous.byId.get(id)!.type !== next.byId.get(id)!.type)
  const entered = (snapshot: Snapshot, tree: string, page: PageRecord, withSubtree: boolean) => {
    const narrowings = new Map<string, Narrowing>([['', undefined]])
    const note = (p: PageRecord) => {
      narrowings.set(`type ${p.type}`, { type: p.type })
      narrowings.set(`menus ${p.showInMenus}`, { menus: p.showInMenus })
    }
    note(page)
    // Its parent's children hold the page alone; the scopes above hold its subtree too.
    for (const [key, narrowing] of narrowings) scopes.add(snapshot, tree, page, `m ${key}`, (scope) => membershipKey(scope, narrowing), 'children')
    // Without exact subtrees, what is below a page is not one range: every type and value is.
    if (withSubtree) for (const below of snapshot.treeExact ? snapshot.pages.slice(page.order + 1, page.subtreeEnd) : representatives(snapshot)) note(below)
    for (const [key, narrowing] of narrowings) scopes.add(snapshot, tree, page, `m ${key}`, (scope) => membershipKey(scope, narrowing), 'above')
  }
  for (const [snapshot, tree, gone] of [[previous, 'previous', changes.removed], [next, 'next', changes.added]] as const) {
    const goneSet = new Set(gone)
    for (const id of [...gone, ...changes.moved]) {
      const page = snapshot.byId.get(id)!
      if (goneSet.has(id) && page.parentId !== null && goneSet.has(page.parentId)) continue
      entered(snapshot, tree, page, true)
    }
    for (const id of typeChanged) entered(snapshot, tree, snapshot.byId.get(id)!, false)
  }
}

/**
 * A page in both trees with other bytes: the fields lists filter and order on, over every scope
 * it is in; what lists show of it (its listing item; with `?fields=`, its stored detail but
 * `meta.parent`, and the listing's `html_url`), unless a place above it already purges every list
 * showing it; its summary, which its children's details show.
 */
function purgeContent(purge: Purge, old: PageRecord, now: PageRecord): void {
  const { previous, next, keys, scopes } = purge
  for (const [field, valueOf] of FIELD_VALUES) {
    if (valueOf(old) === valueOf(now)) continue
    scopes.add(previous, 'previous', old, field, (scope) => fieldKey(scope, field))
    scopes.add(next, 'next', now, field, (scope) => fieldKey(scope, field))
  }
  const itemChanged = old.listItem !== now.listItem || old.typedListItem !== now.typedListItem
  const [oldParts, newParts] = bytesOf(old.detail).equals(bytesOf(now.detail)) ? [undefined, undefined] : [listedParts(old.detail), listedParts(now.detail)]
  const metaChanged = oldParts?.generic !== newParts?.generic || htmlUrlOf(old) !== htmlUrlOf(now) || old.typedListItem !== now.typedListItem ||
    old.showInMenus !== now.showInMenus || old.seoTitle !== now.seoTitle || old.searchDescription !== now.searchDescription
  const fieldsChanged = oldParts?.own !== newParts?.own
  if (itemChanged || metaChanged || fieldsChanged) {
    const top = placedAbove(purge, old)
    if (top === undefined) {
      if (itemChanged) keys.add(itemKey(old.id))
      if (metaChanged) keys.add(metaKey(old.id))
      if (fieldsChanged) keys.add(fieldsKey(old.id))
    }
    scopes.add(previous, 'previous', top ?? old, 'items', itemsKey)
  }
  if ((old.title !== now.title || old.type !== now.type) && (previous.childrenOf.get(old.id)?.length ?? 0) > 0) keys.add(summaryKey(old.id))
}

/**
 * Details: each one whose bytes changed, unless its parent's summary or a place at or above it is
 * purged already; and each id that came, whose 404 a CDN may hold.
 */
function purgeDetails(purge: Purge, changes: PageChangeSets): void {
  const { previous, next, keys, placed } = purge
  const covered = (page: PageRecord) =>
    placed.has(page.id) || placedAbove(purge, page) !== undefined || (page.parentId !== null && keys.has(summaryKey(page.parentId)))
  for (const id of changes.changed) {
    const old = previous.byId.get(id)!
    if (!covered(old) && !bytesOf(old.detail).equals(bytesOf(next.byId.get(id)!.detail))) keys.add(pageKey(id))
  }
  for (const id of changes.removed) if (!covered(previous.byId.get(id)!)) keys.add(pageKey(id))
  for (const id of changes.added) keys.add(pageKey(id))
}

/**
 * The keys of every input that changed between `previous` and `next` (`cms-read` whenever
 * anything did). `changes` is the tree diff of the two (`tree-diff.ts`).
 */
export function changeKeys(previous: Snapshot, next: Snapshot, changes: PageChangeSets): Set<string> {
  const keys = new Set<string>([READ_KEY])
  const purge: Purge = { previous, next, keys, scopes: new ScopeKeys(keys), placed: new Set() }
  purgePlaces(purge, changes)
  purgeMembership(purge, changes)
  for (const id of byPreviousOrder(previous, changes.changed)) purgeContent(purge, previous.byId.get(id)!, next.byId.get(id)!)
  purgeDetails(purge, changes)
  return keys
}
