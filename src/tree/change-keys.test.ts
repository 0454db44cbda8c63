import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { renderList } from '../http/render-list.js'
import { ABSENT_FIND_KEYS, READ_THROUGH_KEYS, absentDetailKeys, detailKeys, findKeys, listKeys } from './answer-keys.js'
import { bytesOf } from './detail-body.js'
import type { ListQuery } from './page-selection.js'
import {
  QUERY_SHAPES, applyMutations, arbitraryMutation, arbitraryTree, snapshotOf, type Mutation, type TreeModel,
} from './random-tree.test-helper.js'
import { selectPages } from './select-pages.js'
import type { Snapshot } from './snapshot.js'
import { diffSnapshots } from './tree-diff.js'

/**
 * One answer a CDN may hold: its bytes under a snapshot (`undefined`: an error nobody caches) and
 * the keys it carries. `exact` answers must be purged only when their bytes changed; the others
 * (windows, filters, read-through) may be purged more often, and are counted.
 */
interface Answer {
  readonly name: string
  readonly exact: boolean
  bytes(snapshot: Snapshot): string | undefined
  keys(snapshot: Snapshot): readonly string[]
}

/** Wagtail keeps sibling slugs unique, so no two pages share an address: the ids make them so here. */
function withUniqueSlugs(model: TreeModel): TreeModel {
  const pages = new Map([...model.pages].map(([id, page]) => [id, { ...page, slug: `${page.slug}-${id}` }]))
  return { rootId: model.rootId, pages }
}

const FIELDS = { key: 'id,title,show_in_menus', body: ['id', 'title'], meta: ['type', 'html_url', 'show_in_menus'] }
/** `fields=*`: every stored member a listing may show; a partial selection is purged when a member it hides changes. */
const ALL_FIELDS = {
  key: '*', body: ['id', 'title'], meta: ['type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title', 'search_description'],
}

/** The list shapes tried in every scope: the whole scope (exact), with and without `?fields=`, and the helper's windows and filters. */
const SHAPES: ReadonlyArray<{ readonly shape: Omit<ListQuery, 'childOf' | 'descendantOf' | 'ancestorOf'>; readonly exact: boolean }> = [
  { shape: { types: null, filters: {}, specific: false, offset: 0, limit: 1000 }, exact: true },
  { shape: { types: null, filters: {}, specific: false, offset: 0, limit: 1000, fields: ALL_FIELDS }, exact: true },
  { shape: { types: null, filters: {}, specific: false, offset: 0, limit: 1000, fields: FIELDS }, exact: false },
  ...QUERY_SHAPES.map((shape) => ({ shape, exact: false })),
  { shape: { types: null, filters: { showInMenus: true }, specific: false, offset: 0, limit: 20, fields: FIELDS }, exact: false },
]

function listAnswer(filter: Partial<ListQuery>, shape: ListQuery, exact: boolean, name: string): Answer {
  const query: ListQuery = { ...shape, ...filter }
  const id = filter.childOf ?? filter.descendantOf ?? filter.ancestorOf
  const rendered = (snapshot: Snapshot) => {
    if (id !== undefined && !snapshot.byId.has(id)) return undefined
    const matching = selectPages(snapshot, query)
    const items = matching.slice(query.offset, query.offset + query.limit)
    return { body: renderList(matching.length, items, query.specific, query.fields).toString('utf8'), keys: listKeys(snapshot, query, items) }
  }
  return { name, exact, bytes: (snapshot) => rendered(snapshot)?.body, keys: (snapshot) => rendered(snapshot)!.keys }
}

/** Every detail (and 404) of the ids of both trees, every list shape in every scope, and `find/` by every path. */
function answersOf(previous: Snapshot, next: Snapshot): Answer[] {
  const ids = [...new Set([...previous.pages.slice(), ...next.pages.slice()].map((page) => page.id))]
  const answers: Answer[] = []
  for (const id of ids) {
    answers.push({
      name: `detail ${id}`,
      exact: true,
      bytes: (snapshot) => {
        const page = snapshot.byId.get(id)
        return page === undefined ? '404' : bytesOf(page.detail).toString('utf8')
      },
      keys: (snapshot) => {
        const page = snapshot.byId.get(id)
        return page === undefined ? absentDetailKeys(id) : detailKeys(snapshot, page)
      },
    })
  }
  const filters: Array<[string, Partial<ListQuery>]> = [['list', {}]]
  for (const page of previous.pages) {
    filters.push([`child_of=${page.id}`, { childOf: page.id }], [`descendant_of=${page.id}`, { descendantOf: page.id }], [`ancestor_of=${page.id}`, { ancestorOf: page.id }])
  }
  for (const [name, filter] of filters) {
    SHAPES.forEach(({ shape, exact }, i) => answers.push(listAnswer(filter, shape as ListQuery, exact, `${name} shape ${i}`)))
  }
  const paths = new Set([...previous.byPath.keys(), ...next.byPath.keys()])
  for (const path of paths) {
    answers.push({
      name: `find ${path}`,
      exact: previous.byPath.has(path),
      bytes: (snapshot) => String(snapshot.byPath.get(path) ?? 'absent'),
      // A path the snapshot does not know is read through.
      keys: (snapshot) => {
        const id = snapshot.byPath.get(path)
        return id === undefined ? READ_THROUGH_KEYS : findKeys(snapshot, snapshot.byId.get(id)!, false)
      },
    })
  }
  answers.push({ name: 'find typed absent id', exact: false, bytes: () => '404', keys: () => ABSENT_FIND_KEYS })
  return answers
}

interface Tally {
  changed: number
  purged: number
  overPurged: number
}

/**
 * Checks one step from `before` to `after`: every answer whose bytes changed carries a purged
 * key; with `exactOnly`, every exact answer that carries one changed.
 */
function checkStep(before: TreeModel, after: TreeModel, exact: boolean, tally: Tally): void {
  const previous = snapshotOf(withUniqueSlugs(before), 1)
  const next = snapshotOf(withUniqueSlugs(after), 2)
  const purged = new Set(diffSnapshots(previous, next).purgeKeys)
  for (const answer of answersOf(previous, next)) {
    const old = answer.bytes(previous)
    if (old === undefined) continue
    const changed = old !== answer.bytes(next)
    const keys = answer.keys(previous)
    const hit = keys.some((key) => purged.has(key))
    if (changed) tally.changed++
    if (hit) tally.purged++
    if (hit && !changed) tally.overPurged++
    if (changed && !hit) throw new Error(`${answer.name} changed, but none of ${keys.join(' ')} is purged (purged: ${[...purged].join(' ')})`)
    if (exact && answer.exact && hit && !changed) {
      throw new Error(`${answer.name} did not change, but ${keys.filter((key) => purged.has(key)).join(' ')} is purged`)
    }
  }
}

describe('changeKeys property: an answer is purged exactly when its bytes changed', () => {
  it('purges every answer whose bytes changed after one edit of any kind, and no exact answer that did not', () => {
    const tally: Tally = { changed: 0, purged: 0, overPurged: 0 }
    fc.assert(
      fc.property(arbitraryTree(20), arbitraryMutation, (tree, mutation: Mutation) => {
        checkStep(tree, applyMutations(tree, [mutation]), true, tally)
      }),
      { numRuns: 80 },
    )
    console.log(`one edit: ${tally.changed} answers changed, ${tally.purged} purged (${(tally.purged / Math.max(1, tally.changed)).toFixed(2)}x), ${tally.overPurged} of them unchanged`)
    expect(tally.changed).toBeGreaterThan(300)
  })

  it('never leaves a changed answer unpurged after several edits in one sync, and counts what it purges beyond', () => {
    const tally: Tally = { changed: 0, purged: 0, overPurged: 0 }
    fc.assert(
      fc.property(arbitraryTree(20), fc.array(arbitraryMutation, { minLength: 2, maxLength: 4 }), (tree, mutations) => {
        checkStep(tree, applyMutations(tree, mutations), false, tally)
      }),
      { numRuns: 50 },
    )
    console.log(`several edits: ${tally.changed} answers changed, ${tally.purged} purged (${(tally.purged / Math.max(1, tally.changed)).toFixed(2)}x)`)
    expect(tally.changed).toBeGreaterThan(300)
  })

  it('keeps an answer cached through edits that do not touch it, and purges it at the first that does', () => {
    // A CDN holds each answer with the keys of the snapshot it was fetched under, through a run
    // of syncs: it must never hold changed bytes, whenever it was fetched.
    fc.assert(
      fc.property(arbitraryTree(12), fc.array(arbitraryMutation, { minLength: 2, maxLength: 4 }), (tree, mutations) => {
        let model = tree
        let snapshot = snapshotOf(withUniqueSlugs(model), 1)
        const held = new Map<string, { bytes: string; keys: readonly string[] }>()
        const fetch = (s: Snapshot, answers: Answer[]) => {
          for (const answer of answers) {
            const bytes = answer.bytes(s)
            if (bytes !== undefined && !held.has(answer.name)) held.set(answer.name, { bytes, keys: answer.keys(s) })
          }
        }
        mutations.forEach((mutation, step) => {
          const nextModel = applyMutations(model, [mutation])
          const next = snapshotOf(withUniqueSlugs(nextModel), step + 2)
          const answers = answersOf(snapshot, next)
          fetch(snapshot, answers)
          const purged = new Set(diffSnapshots(snapshot, next).purgeKeys)
          for (const answer of answers) {
            const kept = held.get(answer.name)
            if (kept === undefined) continue
            if (kept.keys.some((key) => purged.has(key))) held.delete(answer.name)
            else expect(answer.bytes(next), `${answer.name} after step ${step}`).toBe(kept.bytes)
          }
          model = nextModel
          snapshot = next
        })
      }),
      { numRuns: 25 },
    )
  })
})
