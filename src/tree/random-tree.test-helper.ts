/**
 * Random page trees and random edits of them, for the property tests of scopes and tree diffs.
 *
 * The texts are derived honestly from the tree, the way Wagtail renders them: a listing item
 * shows id, type, detail_url, html_url (the slug path), slug and title; a detail also shows
 * show_in_menus, seo_title, search_description and `meta.parent` (the parent's id, type,
 * html_url and title). So a slug change or a move changes the whole subtree's bytes, and a
 * parent's new title changes its children's details — exactly what a real sync delivers.
 *
 * Not a test file (vitest includes `*.test.ts`); imported by `list-scope.test.ts`,
 * `tree-diff.test.ts` and `change-keys.test.ts`.
 * @module
 */
import fc from 'fast-check'
import { renderList } from '../http/render-list.js'
import type { ListQuery } from './page-selection.js'
import { buildSnapshot, type SyncedPage } from './build-snapshot.js'
import { bytesOf } from './detail-body.js'
import type { Scope } from './list-scope.js'
import { selectPages } from './select-pages.js'
import type { Dialect, Snapshot } from './snapshot.js'

export const DIALECT: Dialect = { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' }

/** A redirect page's typed listing item differs (its html_url is the redirect's target). */
export const PAGE_TYPES = ['home.HomePage', 'blog.BlogPage', 'base.RedirectPage'] as const
const TITLES = ['Home', 'Blog', 'Alpha', 'Blog One ü ☃', 'Say "hi"'] as const
const SLUGS = ['home', 'blog', 'alpha', 'beta'] as const

export interface ModelFields {
  type: string
  title: string
  slug: string
  showInMenus: boolean
}

export interface ModelPage extends ModelFields {
  readonly id: number
  parentId: number | null
  /** Child ids in sibling order. */
  children: number[]
}

/** A mutable description of a tree; {@link applyMutation} works on a copy. */
export interface TreeModel {
  readonly rootId: number
  readonly pages: Map<number, ModelPage>
}

export const arbitraryFields: fc.Arbitrary<ModelFields> = fc.record({
  type: fc.constantFrom(...PAGE_TYPES),
  title: fc.constantFrom(...TITLES),
  slug: fc.constantFrom(...SLUGS),
  showInMenus: fc.boolean(),
})

/** Each new page hangs below a page already placed (the choice picks which), in sibling order. */
export function arbitraryTree(maxPages = 24): fc.Arbitrary<TreeModel> {
  return fc
    .tuple(arbitraryFields, fc.array(fc.tuple(fc.nat(), arbitraryFields), { maxLength: maxPages - 1 }))
    .map(([rootFields, rest]) => {
      const pages = new Map<number, ModelPage>([[1, { id: 1, parentId: null, children: [], ...rootFields }]])
      rest.forEach(([choice, fields], index) => {
        const id = index + 2
        const parentId = (choice % pages.size) + 1
        pages.set(id, { id, parentId, children: [], ...fields })
        pages.get(parentId)!.children.push(id)
      })
      return { rootId: 1, pages }
    })
}

export type Mutation =
  | { readonly kind: 'edit'; readonly target: number; readonly field: keyof ModelFields; readonly value: number }
  | { readonly kind: 'move'; readonly target: number; readonly destination: number; readonly position: number }
  | { readonly kind: 'delete'; readonly target: number }
  | { readonly kind: 'add'; readonly parent: number; readonly position: number; readonly fields: ModelFields }
  | { readonly kind: 'reorder'; readonly parent: number; readonly from: number; readonly to: number }

export const arbitraryMutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('edit' as const),
    target: fc.nat(),
    field: fc.constantFrom<keyof ModelFields>('type', 'title', 'slug', 'showInMenus'),
    value: fc.nat(),
  }),
  fc.record({ kind: fc.constant('move' as const), target: fc.nat(), destination: fc.nat(), position: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), target: fc.nat() }),
  fc.record({ kind: fc.constant('add' as const), parent: fc.nat(), position: fc.nat(), fields: arbitraryFields }),
  fc.record({ kind: fc.constant('reorder' as const), parent: fc.nat(), from: fc.nat(), to: fc.nat() }),
)

export interface Scenario {
  readonly tree: TreeModel
  readonly mutations: readonly Mutation[]
}

/** A tree and 0–`maxMutations` edits of it (none: the next snapshot is an identical rebuild). */
export function arbitraryScenario(maxPages = 24, maxMutations = 4): fc.Arbitrary<Scenario> {
  return fc.record({ tree: arbitraryTree(maxPages), mutations: fc.array(arbitraryMutation, { maxLength: maxMutations }) })
}

export function cloneTree(model: TreeModel): TreeModel {
  const pages = new Map<number, ModelPage>()
  for (const [id, page] of model.pages) pages.set(id, { ...page, children: [...page.children] })
  return { rootId: model.rootId, pages }
}

/** Ids in pre-order from the root. */
export function treeOrder(model: TreeModel): number[] {
  const order: number[] = []
  const stack = [model.rootId]
  while (stack.length > 0) {
    const id = stack.pop()!
    order.push(id)
    const children = model.pages.get(id)!.children
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!)
  }
  return order
}

function subtreeIds(model: TreeModel, id: number): Set<number> {
  const ids = new Set<number>()
  const stack = [id]
  while (stack.length > 0) {
    const current = stack.pop()!
    ids.add(current)
    stack.push(...model.pages.get(current)!.children)
  }
  return ids
}

const pick = <T>(items: readonly T[], choice: number): T | undefined => (items.length === 0 ? undefined : items[choice % items.length])

function detachFromParent(model: TreeModel, page: ModelPage): void {
  const parent = model.pages.get(page.parentId!)!
  parent.children = parent.children.filter((child) => child !== page.id)
}

/** A new model with the mutation applied; a mutation that does not fit the tree changes nothing. */
export function applyMutation(source: TreeModel, mutation: Mutation): TreeModel {
  const model = cloneTree(source)
  const ids = [...model.pages.keys()].sort((a, b) => a - b)
  const nonRoot = ids.filter((id) => id !== model.rootId)
  switch (mutation.kind) {
    case 'edit': {
      const page = model.pages.get(pick(ids, mutation.target)!)!
      if (mutation.field === 'showInMenus') page.showInMenus = !page.showInMenus
      else if (mutation.field === 'type') page.type = pick(PAGE_TYPES, mutation.value)!
      else if (mutation.field === 'title') page.title = pick(TITLES, mutation.value)!
      else page.slug = pick(SLUGS, mutation.value)!
      break
    }
    case 'move': {
      const target = pick(nonRoot, mutation.target)
      if (target === undefined) break
      const page = model.pages.get(target)!
      const inside = subtreeIds(model, target)
      const destination = pick(ids.filter((id) => !inside.has(id)), mutation.destination)!
      detachFromParent(model, page)
      const siblings = model.pages.get(destination)!.children
      siblings.splice(mutation.position % (siblings.length + 1), 0, target)
      page.parentId = destination
      break
    }
    case 'delete': {
      const target = pick(nonRoot, mutation.target)
      if (target === undefined) break
      detachFromParent(model, model.pages.get(target)!)
      for (const id of subtreeIds(model, target)) model.pages.delete(id)
      break
    }
    case 'add': {
      const id = ids[ids.length - 1]! + 1
      const parentId = pick(ids, mutation.parent)!
      const siblings = model.pages.get(parentId)!.children
      siblings.splice(mutation.position % (siblings.length + 1), 0, id)
      model.pages.set(id, { id, parentId, children: [], ...mutation.fields })
      break
    }
    case 'reorder': {
      const parents = ids.filter((id) => model.pages.get(id)!.children.length >= 2)
      const parentId = pick(parents, mutation.parent)
      if (parentId === undefined) break
      const siblings = model.pages.get(parentId)!.children
      const [child] = siblings.splice(mutation.from % siblings.length, 1)
      siblings.splice(mutation.to % (siblings.length + 1), 0, child!)
      break
    }
  }
  return model
}

export function applyMutations(model: TreeModel, mutations: readonly Mutation[]): TreeModel {
  return mutations.reduce(applyMutation, model)
}

const BASE = 'http://localhost/api/v2/pages/'

/** The SyncedPages a sync of this tree delivers, with texts rendered from the tree. */
export function syncedPages(model: TreeModel): SyncedPage[] {
  const htmlUrl = new Map<number, string>()
  return treeOrder(model).map((id): SyncedPage => {
    const page = model.pages.get(id)!
    const parent = page.parentId === null ? undefined : model.pages.get(page.parentId)!
    const url = parent === undefined ? 'http://example.com/' : `${htmlUrl.get(parent.id)!}${page.slug}/`
    htmlUrl.set(id, url)
    const item = (shownUrl: string) =>
      `{"id": ${id}, "meta": {"type": ${JSON.stringify(page.type)}, "detail_url": "${BASE}${id}/", ` +
      `"html_url": ${JSON.stringify(shownUrl)}, "slug": ${JSON.stringify(page.slug)}}, "title": ${JSON.stringify(page.title)}}`
    const parentMeta =
      parent === undefined
        ? 'null'
        : `{"id": ${parent.id}, "meta": {"type": ${JSON.stringify(parent.type)}, "detail_url": "${BASE}${parent.id}/", ` +
          `"html_url": ${JSON.stringify(htmlUrl.get(parent.id)!)}}, "title": ${JSON.stringify(parent.title)}}`
    const detail =
      `{"id": ${id}, "meta": {"type": ${JSON.stringify(page.type)}, "detail_url": "${BASE}${id}/", ` +
      `"html_url": ${JSON.stringify(url)}, "slug": ${JSON.stringify(page.slug)}, "show_in_menus": ${page.showInMenus}, ` +
      `"seo_title": "", "search_description": "", "parent": ${parentMeta}}, "title": ${JSON.stringify(page.title)}}`
    return {
      id,
      type: page.type,
      title: page.title,
      slug: page.slug,
      showInMenus: page.showInMenus,
      seoTitle: '',
      searchDescription: '',
      parentId: page.parentId,
      listItem: item(url),
      ...(page.type === 'base.RedirectPage' ? { typedListItem: item(`https://elsewhere.example/${page.slug}`) } : {}),
      detail,
    }
  })
}

export function snapshotOf(model: TreeModel, version = 1): Snapshot {
  return buildSnapshot(syncedPages(model), { version, syncedAt: 0, dialect: DIALECT })
}

/** The previous and next snapshots of a scenario. */
export function scenarioSnapshots(scenario: Scenario): { previous: Snapshot; next: Snapshot } {
  return { previous: snapshotOf(scenario.tree, 1), next: snapshotOf(applyMutations(scenario.tree, scenario.mutations), 2) }
}

type QueryShape = Omit<ListQuery, 'childOf' | 'descendantOf' | 'ancestorOf'>

/**
 * The list queries tried over every scope: every type alone (specific), two types, all types;
 * each with and without a `show_in_menus` filter; a first page and a narrow window; and a title
 * filter.
 */
export const QUERY_SHAPES: readonly QueryShape[] = (() => {
  const shapes: QueryShape[] = []
  const typeSets: Array<ReadonlySet<string> | null> = [null, ...PAGE_TYPES.map((type) => new Set([type])), new Set(PAGE_TYPES.slice(0, 2))]
  for (const types of typeSets) {
    for (const showInMenus of [undefined, true, false]) {
      for (const [offset, limit] of [[0, 20], [1, 2]] as const) {
        shapes.push({ types, filters: showInMenus === undefined ? {} : { showInMenus }, specific: types?.size === 1, offset, limit })
      }
    }
  }
  shapes.push({ types: null, filters: { title: 'Alpha' }, specific: false, offset: 0, limit: 20 })
  return shapes
})()

/** The default listing: no filter, the first 20. */
export const DEFAULT_SHAPE: QueryShape = QUERY_SHAPES[0]!

/**
 * The bytes a scope's responses have in a snapshot: the detail for a page scope, else one
 * rendered list per query shape. `undefined` when the scope's page is not there (a 404/400).
 */
export function scopeResponses(snapshot: Snapshot, scope: Scope, shapes: readonly QueryShape[] = QUERY_SHAPES): Buffer[] | undefined {
  if (scope.kind === 'page') {
    const page = snapshot.byId.get(scope.id)
    return page === undefined ? undefined : [bytesOf(page.detail)]
  }
  if (scope.kind !== 'tree' && !snapshot.byId.has(scope.id)) return undefined
  const treeFilter =
    scope.kind === 'children' ? { childOf: scope.id }
      : scope.kind === 'descendants' ? { descendantOf: scope.id }
        : scope.kind === 'ancestors' ? { ancestorOf: scope.id }
          : {}
  return shapes.map((shape) => {
    const query: ListQuery = { ...shape, ...treeFilter }
    const selected = selectPages(snapshot, query)
    return renderList(selected.length, selected.slice(query.offset, query.offset + query.limit), query.specific)
  })
}

export function sameResponses(a: readonly Buffer[] | undefined, b: readonly Buffer[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  return a.length === b.length && a.every((bytes, i) => bytes.equals(b[i]!))
}

/** Every scope a page can be read through. */
export function scopesOf(id: number): Scope[] {
  return [
    { kind: 'page', id },
    { kind: 'children', id },
    { kind: 'descendants', id },
    { kind: 'ancestors', id },
  ]
}
