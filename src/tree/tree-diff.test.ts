import { performance } from 'node:perf_hooks'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bytesOf } from './detail-body.js'
import { buildSnapshot, carryOver, patchSnapshot } from './build-snapshot.js'
import {
  DIALECT, applyMutation, applyMutations, arbitraryScenario, arbitraryTree, scenarioSnapshots,
  snapshotOf, syncedPages, type ModelPage, type Mutation, type TreeModel,
} from './random-tree.test-helper.js'
import { diffSnapshots } from './tree-diff.js'

const page = (id: number, parentId: number | null, children: number[], title = `Page ${id}`): [number, ModelPage] => [
  id,
  { id, parentId, children, type: 'blog.BlogPage', title, slug: `p${id}`, showInMenus: false },
]

/** 1 › {2 › {4 › {7}, 5}, 3 › {6}} — sections 2 and 3. */
const model: TreeModel = {
  rootId: 1,
  pages: new Map([
    page(1, null, [2, 3]), page(2, 1, [4, 5]), page(3, 1, [6]), page(4, 2, [7]), page(5, 2, []), page(6, 3, []), page(7, 4, []),
  ]),
}
const previous = snapshotOf(model, 1)
const after = (...mutations: Mutation[]) => snapshotOf(applyMutations(model, mutations), 2)
/** Membership keys of scopes, whole and narrowed to the blog pages' type and one show_in_menus value. */
const scoped = (scopes: string[], menus: 'true' | 'false') =>
  scopes.flatMap((scope) => [`cms-${scope}`, `cms-${scope}-menus-${menus}`, `cms-${scope}-type-blog.blogpage`])
/** Mutations pick pages by position in the sorted ids; these name them by id. */
const idx = (id: number) => [...model.pages.keys()].sort((a, b) => a - b).indexOf(id)
const nonRootIdx = (id: number) => idx(id) - 1

describe('diffSnapshots', () => {
  it('marks every page added and purges everything for the first snapshot', () => {
    const change = diffSnapshots(undefined, previous)
    expect(change.added).toEqual([1, 2, 4, 7, 5, 3, 6])
    expect(change.removed).toEqual([])
    expect(change.purgeKeys).toEqual(['cms-pages'])
  })

  it('finds nothing between a snapshot and an identical rebuild', () => {
    const change = diffSnapshots(previous, snapshotOf(model, 2))
    expect(change).toEqual({ added: [], removed: [], changed: [], moved: [], purgeKeys: [] })
    expect(diffSnapshots(previous, previous).purgeKeys).toEqual([])
  })

  it('purges a retitled leaf\'s detail, its item and the title filters of its scopes, nothing of another section', () => {
    const change = diffSnapshots(previous, after({ kind: 'edit', target: idx(7), field: 'title', value: 0 }))
    expect(change.changed).toEqual([7])
    expect(change.added.length + change.removed.length + change.moved.length).toBe(0)
    expect(change.purgeKeys).toEqual([
      'cms-children-4-items', 'cms-children-4-title', 'cms-descendants-1-items', 'cms-descendants-1-title', 'cms-descendants-2-items',
      'cms-descendants-2-title', 'cms-descendants-4-items', 'cms-descendants-4-title', 'cms-item-7', 'cms-list-items', 'cms-list-title', 'cms-meta-7',
      'cms-page-7', 'cms-read',
    ])
  })

  it('purges a retitled page\'s summary for its children\'s details, not each child\'s detail', () => {
    // 4's title shows in 7's detail (meta.parent) and, through 4's item, in 7's ancestors list.
    const change = diffSnapshots(previous, after({ kind: 'edit', target: idx(4), field: 'title', value: 0 }))
    expect(change.changed).toEqual([4, 7])
    expect(change.purgeKeys).toEqual(expect.arrayContaining(['cms-summary-4', 'cms-item-4', 'cms-page-4']))
    expect(change.purgeKeys).not.toContain('cms-page-7')
  })

  it('purges a moved subtree where it was and where it is', () => {
    // 4 › 7 moves from section 2 to below 6 in section 3.
    const change = diffSnapshots(previous, after({ kind: 'move', target: nonRootIdx(4), destination: 4, position: 0 }))
    expect(change.moved).toEqual([4])
    expect(change.changed).toEqual([4, 7]) // their html_url follows the move
    expect(change.purgeKeys).toEqual(expect.arrayContaining([
      'cms-children-2', 'cms-children-6', 'cms-descendants-2', 'cms-descendants-3', 'cms-descendants-6', 'cms-path-4', 'cms-ancestors-4',
    ]))
    // Everything below 4 is purged through its place: no key of its own.
    expect(change.purgeKeys.filter((key) => key.endsWith('-7'))).toEqual([])
  })

  it('names the one page that moved among many siblings, not the siblings it passed', () => {
    const wide: TreeModel = { rootId: 1, pages: new Map([page(1, null, [2, 3, 4, 5, 6, 7]), ...[2, 3, 4, 5, 6, 7].map((id) => page(id, 1, []))]) }
    // Move the last child (index 5) to the front.
    const change = diffSnapshots(snapshotOf(wide, 1), snapshotOf(applyMutation(wide, { kind: 'reorder', parent: 0, from: 5, to: 0 }), 2))
    expect(change.moved).toEqual([7])
    expect(change.changed).toEqual([])
    expect(change.purgeKeys).toEqual([...scoped(['children-1', 'descendants-1', 'list'], 'false'), 'cms-read'].sort())
  })

  it('purges a deleted subtree through its top page\'s place, and the scopes it leaves', () => {
    const change = diffSnapshots(previous, after({ kind: 'delete', target: nonRootIdx(4) }))
    expect(change.removed).toEqual([4, 7])
    expect(change.purgeKeys).toEqual([
      'cms-ancestors-4', 'cms-exists-4', 'cms-exists-7', 'cms-path-4', 'cms-read', ...scoped(['children-2', 'descendants-1', 'descendants-2', 'list'], 'false'),
    ].sort())
  })

  it('purges the scopes an added page enters, and its id\'s 404', () => {
    const change = diffSnapshots(previous, after({
      kind: 'add', parent: idx(6), position: 0, fields: { type: 'blog.BlogPage', title: 'New', slug: 'new', showInMenus: true },
    }))
    expect(change.added).toEqual([8])
    expect(change.purgeKeys).toEqual(['cms-page-8', 'cms-read', ...scoped(['children-6', 'descendants-1', 'descendants-3', 'descendants-6', 'list'], 'true')].sort())
  })

  it('purges everything when the CMS answers in another dialect', () => {
    const pages = syncedPages(model)
    const upgraded = buildSnapshot(pages, { version: 2, syncedAt: 0, dialect: { ...DIALECT, emptyTypeIgnored: false } })
    const change = diffSnapshots(previous, upgraded)
    expect(change.changed).toEqual([])
    expect(change.purgeKeys).toContain('cms-pages')
  })

  it('diffs two 2000-page trees in linear time (logged, not asserted)', () => {
    const pages = new Map<number, ModelPage>([page(1, null, [])])
    for (let id = 2; id <= 2000; id++) {
      // A deterministic, uneven tree: mostly shallow, with some deep chains.
      const parentId = id % 7 === 0 ? id - 1 : 1 + ((id * 2654435761) % (id - 1))
      pages.set(id, page(id, parentId, [])[1])
      pages.get(parentId)!.children.push(id)
    }
    const big: TreeModel = { rootId: 1, pages }
    const bigNext = applyMutations(big, [
      { kind: 'move', target: 300, destination: 1500, position: 0 },
      { kind: 'edit', target: 0, field: 'title', value: 2 },
      { kind: 'delete', target: 1200 },
      { kind: 'reorder', parent: 3, from: 0, to: 5 },
      { kind: 'add', parent: 900, position: 1, fields: { type: 'blog.BlogPage', title: 'New', slug: 'new', showInMenus: false } },
    ])
    const a = snapshotOf(big, 1)
    const b = snapshotOf(bigNext, 2)
    const start = performance.now()
    const change = diffSnapshots(a, b)
    const elapsed = performance.now() - start
    console.log(
      `diffSnapshots over ${a.pages.length} → ${b.pages.length} pages: ${elapsed.toFixed(1)} ms, ` +
      `${change.changed.length} changed, ${change.moved.length} moved, ${change.purgeKeys.length} keys`,
    )
    expect(change.purgeKeys.length).toBeGreaterThan(0)
  })
})

describe('diffSnapshots property: the pages it names', () => {
  it('lists exactly the pages that came, went, or changed bytes', () => {
    fc.assert(
      fc.property(arbitraryScenario(), (scenario) => {
        const { previous: before, next } = scenarioSnapshots(scenario)
        const change = diffSnapshots(before, next)
        const sorted = (ids: readonly number[]) => [...ids].sort((a, b) => a - b)
        expect(sorted(change.added)).toEqual(sorted(next.pages.slice().filter((p) => !before.byId.has(p.id)).map((p) => p.id)))
        expect(sorted(change.removed)).toEqual(sorted(before.pages.slice().filter((p) => !next.byId.has(p.id)).map((p) => p.id)))
        expect(sorted(change.changed)).toEqual(sorted(
          next.pages.slice().filter((p) => before.byId.has(p.id) && !bytesOf(before.byId.get(p.id)!.detail).equals(bytesOf(p.detail))).map((p) => p.id),
        ))
        for (const id of change.moved) expect(before.byId.has(id) && next.byId.has(id)).toBe(true)
        expect([...change.purgeKeys].sort()).toEqual(change.purgeKeys)
        expect(new Set(change.purgeKeys).size).toBe(change.purgeKeys.length)
      }),
      { numRuns: 150 },
    )
  })

  it('gives the same answer when the next tree shares the records of pages carried over unchanged', () => {
    fc.assert(
      fc.property(arbitraryScenario(), (scenario) => {
        const { previous: before, next: apart } = scenarioSnapshots(scenario)
        // As an incremental sync builds it: an unchanged page is its previous record, carried over.
        const pages = syncedPages(applyMutations(scenario.tree, scenario.mutations)).map((page) => {
          const record = before.byId.get(page.id)
          const same = record !== undefined && record.listItem === page.listItem && record.parentId === page.parentId &&
            typeof page.detail === 'string' && bytesOf(record.detail).equals(Buffer.from(page.detail))
          return same ? carryOver(record) : page
        })
        const sharing = buildSnapshot(pages, { version: 2, syncedAt: 0, dialect: DIALECT })
        expect(sharing.fingerprint).toBe(apart.fingerprint)
        expect(diffSnapshots(before, sharing)).toEqual(diffSnapshots(before, apart))
      }),
      { numRuns: 200, seed: 42 },
    )
  })

  it('gives the same answer for a snapshot patched in place as for the same pages built whole, looking only at the replaced pages', () => {
    const inPlaceEdits = fc.array(
      fc.record({ kind: fc.constant('edit' as const), target: fc.nat(), field: fc.constantFrom('title' as const, 'showInMenus' as const), value: fc.nat() }),
      { minLength: 1, maxLength: 4 },
    )
    fc.assert(
      fc.property(arbitraryTree(30), inPlaceEdits, (tree, edits) => {
        const before = syncedPages(tree)
        const previous = buildSnapshot(before, { version: 1, syncedAt: 0, dialect: DIALECT })
        const after = syncedPages(applyMutations(tree, edits))
        const replaced = new Map(after.filter((page, i) => page.detail !== before[i]!.detail || page.listItem !== before[i]!.listItem).map((page) => [page.id, page]))
        const patched = patchSnapshot(previous, replaced, { version: 2, syncedAt: 0, dialect: DIALECT })
        const built = buildSnapshot(after, { version: 2, syncedAt: 0, dialect: DIALECT })
        expect(patched.patched).toEqual({ from: previous.fingerprint, ids: [...replaced.keys()] })
        expect(diffSnapshots(previous, patched)).toEqual(diffSnapshots(previous, built))
      }),
      { numRuns: 200 },
    )
  })
})
