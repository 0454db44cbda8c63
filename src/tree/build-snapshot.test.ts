import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeSnapshot, type PageSpec } from '../../test/helpers/make-snapshot.js'
import { buildSnapshot, buildSnapshotInSlices, carryOver, patchSnapshot, patchSnapshotInSlices, TreeInconsistentError, type SyncedPage } from './build-snapshot.js'
import { applyMutations, arbitraryTree as arbitraryModelTree, DIALECT, syncedPages } from './random-tree.test-helper.js'
import { MAX_OVERLAY, PatchedMap } from './patched-map.js'
import { selectPages } from './select-pages.js'
import { SLICE } from './slices.js'
import type { PageRecord, Snapshot } from './snapshot.js'

const page = (id: number, parentId: number | null): SyncedPage => ({
  id, parentId, type: 'cms.GenericPage', title: `t${id}`, slug: `s${id}`, showInMenus: true, seoTitle: '', searchDescription: '',
  listItem: '{}', detail: '{}',
})

/** Every reason `buildSnapshot` refuses the pages, as its TreeInconsistentError lists them; empty when it builds. */
function findTreeProblems(pages: readonly SyncedPage[]): string[] {
  try {
    buildSnapshot(pages, { version: 1, syncedAt: 0, dialect: DIALECT })
    return []
  } catch (caught) {
    if (caught instanceof TreeInconsistentError) return [...caught.problems]
    throw caught
  }
}

describe('findTreeProblems: never publish a bad tree', () => {
  it('accepts one consistent tree', () => {
    expect(findTreeProblems([page(1, null), page(2, 1), page(3, 2)])).toEqual([])
  })
  it('names a page listed twice', () => {
    expect(findTreeProblems([page(1, null), page(2, 1), page(2, 1)])).toContain('page 2 is listed twice')
  })
  it('names a parent that is not in the tree', () => {
    expect(findTreeProblems([page(1, null), page(2, 7)])).toContain('page 2 names parent 7, which is not in the tree')
  })
  it('names a cycle', () => {
    expect(findTreeProblems([page(1, null), page(2, 3), page(3, 2)]).some((p) => p.includes('form a cycle'))).toBe(true)
  })
  it('refuses an empty tree and a tree that does not start at its root', () => {
    expect(findTreeProblems([])).toEqual(['the CMS lists no pages'])
    expect(findTreeProblems([page(2, 1), page(1, null)])).toContain('the first page in tree order (2) is not the site root')
  })
  it('finds a cycle among pages listed after their parents', () => {
    expect(findTreeProblems([page(1, null), page(3, 4), page(4, 3)])).toContain('pages 3 → 4 form a cycle')
  })
  it('throws TreeInconsistentError with every problem from makeSnapshot', () => {
    expect(() => makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 9 }])).toThrow(TreeInconsistentError)
  })
})

/** A random tree in pre-order: each new page hangs below a page already placed. */
const arbitraryTree = fc.array(fc.nat(), { minLength: 0, maxLength: 40 }).map((choices) => {
  const parents: Array<number | null> = [null]
  for (const choice of choices) parents.push(choice % parents.length)
  // Re-order into a pre-order walk, the CMS's tree order.
  const children = new Map<number, number[]>()
  parents.forEach((parent, index) => {
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), index])
  })
  const order: number[] = []
  const walk = (index: number) => {
    order.push(index)
    for (const child of children.get(index) ?? []) walk(child)
  }
  walk(0)
  return order.map((index): PageSpec => ({ id: index + 1, parent: parents[index] === null ? null : parents[index]! + 1 }))
})

describe('tree index properties', () => {
  it('descendant ranges, children and ancestors agree with the parent links', () => {
    fc.assert(
      fc.property(arbitraryTree, (specs) => {
        const snapshot = makeSnapshot(specs)
        expect(snapshot.treeExact).toBe(true)
        const parentOf = new Map(specs.map((s) => [s.id, s.parent]))
        const isAncestor = (a: number, d: number) => {
          for (let p = parentOf.get(d); p != null; p = parentOf.get(p)) if (p === a) return true
          return false
        }
        for (const target of snapshot.pages) {
          const select = (extra: object) => selectPages(snapshot, { types: null, filters: {}, ...extra }).map((p) => p.id)
          const treeOrder = (pred: (id: number) => boolean) => snapshot.pages.slice().map((p) => p.id).filter(pred)
          expect(select({ descendantOf: target.id })).toEqual(treeOrder((id) => isAncestor(target.id, id)))
          expect(select({ ancestorOf: target.id })).toEqual(treeOrder((id) => isAncestor(id, target.id)))
          expect(select({ childOf: target.id })).toEqual(treeOrder((id) => parentOf.get(id) === target.id))
        }
      }),
    )
  })
})

/** A wide tree of `n` pages in tree order: page i hangs below page floor(i / 10) (or the root). */
/**
 * A snapshot with its lookups read out into plain maps, so that a patched one compares equal to a
 * built one (less `patched`, which says where a patch came from).
 */
function readable({ patched: _patched, ...snapshot }: Snapshot) {
  return {
    ...snapshot,
    // What a reader sees, not how it is held (a patched list lays its changes over a shared array).
    pages: snapshot.pages.slice(),
    byId: new Map(snapshot.pages.slice().map((page) => [page.id, snapshot.byId.get(page.id)])),
    byIdSize: snapshot.byId.size,
    childrenOf: new Map(snapshot.pages.slice().filter((page) => snapshot.childrenOf.has(page.id)).map((page) => [page.id, snapshot.childrenOf.get(page.id)])),
    childrenOfSize: snapshot.childrenOf.size,
  }
}

function wideTree(n: number): SyncedPage[] {
  const children = new Map<number, number[]>()
  for (let id = 2; id <= n; id++) {
    const parent = Math.max(1, Math.floor(id / 10))
    const siblings = children.get(parent)
    if (siblings) siblings.push(id)
    else children.set(parent, [id])
  }
  const pages: SyncedPage[] = []
  const walk = (id: number, parentId: number | null) => {
    pages.push(page(id, parentId))
    for (const child of children.get(id) ?? []) walk(child, id)
  }
  walk(1, null)
  return pages
}

describe('building a snapshot off the request path', () => {
  const options = { version: 1, syncedAt: 5, dialect: { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused' as const, notAcceptableText: 'Could not satisfy the request Accept header.' } }

  it('builds in slices the same snapshot as in one go, giving the event loop back between slices', async () => {
    const pages = wideTree(10_000)
    let pauses = 0
    const sliced = await buildSnapshotInSlices(pages, options, async () => {
      pauses++
    })
    const whole = buildSnapshot(pages, options)
    expect(sliced).toEqual(whole)
    // 10,000 pages in slices of 2,048, through five passes: never one long block.
    expect(pauses).toBeGreaterThanOrEqual(10)
  })

  it('refuses an inconsistent tree in slices too', async () => {
    await expect(buildSnapshotInSlices([page(1, null), page(2, 9)], options, async () => {})).rejects.toThrow(TreeInconsistentError)
  })

  it('keeps the very record of a page carried over unchanged, and makes a new one where its place changed', () => {
    const first = buildSnapshot(wideTree(50), options)
    const carried = first.pages.slice().map(carryOver)
    const same = buildSnapshot(carried, { ...options, version: 2 })
    expect(same.pages.slice().every((record, i) => record === first.pages.at(i))).toBe(true)
    expect(same.fingerprint).toBe(first.fingerprint)

    // A new first child of the root shifts every later page one place down the tree order.
    const shifted = buildSnapshot([carried[0]!, page(999, 1), ...carried.slice(1)], { ...options, version: 3 })
    expect(shifted.byId.get(2)).not.toBe(first.byId.get(2))
    expect(shifted.byId.get(2)).toMatchObject({ order: 2, digest: first.byId.get(2)!.digest, detail: first.byId.get(2)!.detail })
    expect(shifted.byId.get(1)).not.toBe(first.byId.get(1)) // its subtree grew
  })
})

describe('replacing pages in place (a PURGE of an edited page)', () => {
  const options = { version: 2, syncedAt: 7, fullSyncedAt: 3, dialect: DIALECT }
  /** Edits that keep every page where it is: titles and menu flags, never slugs, types or places. */
  const inPlaceEdits = fc.array(
    fc.record({ kind: fc.constant('edit' as const), target: fc.nat(), field: fc.constantFrom('title' as const, 'showInMenus' as const), value: fc.nat() }),
    { minLength: 1, maxLength: 4 },
  )

  it('makes the very snapshot a full build of the edited pages makes, patch after patch, keeping every other record', () => {
    fc.assert(
      fc.property(arbitraryModelTree(30), fc.array(inPlaceEdits, { minLength: 1, maxLength: 4 }), (model, rounds) => {
        const initial = syncedPages(model)
        const first = buildSnapshot(initial, { version: 1, syncedAt: 0, dialect: DIALECT })
        let [tree, pages, snapshot] = [model, initial, first]
        for (const edits of rounds) {
          tree = applyMutations(tree, edits)
          const after = syncedPages(tree)
          // What a refresh in place delivers: the pages whose bytes changed (a retitled page's
          // children too: their details embed its title), the rest carried over.
          const replaced = new Map(after.filter((page, i) => page.detail !== pages[i]!.detail || page.listItem !== pages[i]!.listItem).map((page) => [page.id, page]))
          const previous = snapshot
          snapshot = patchSnapshot(previous, replaced, options)
          const built = buildSnapshot(after.map((page, i) => (replaced.has(page.id) ? page : carryOver(previous.pages.at(i)!))), options)
          expect(readable(snapshot)).toEqual(readable(built))
          expect(snapshot.fingerprint).toBe(built.fingerprint)
          for (const record of snapshot.pages) if (!replaced.has(record.id)) expect(record).toBe(previous.byId.get(record.id))
          pages = after
        }
        // The first snapshot is untouched: readers holding it see one moment.
        expect(readable(buildSnapshot(initial, { version: 1, syncedAt: 0, dialect: DIALECT }))).toEqual(readable(first))
      }),
    )
  })

  it('shares what a patch did not touch: other records, the maps under its changes, other fingerprint blocks', async () => {
    const previous = buildSnapshot(wideTree(5_000), { version: 1, syncedAt: 0, dialect: DIALECT })
    const edited = { ...carryOver(previous.byId.get(42)!), title: 'Edited', detail: '{"edited": true}', digest: undefined, from: undefined }
    let pauses = 0
    const patched = await patchSnapshotInSlices(previous, new Map([[42, edited]]), options, async () => {
      pauses++
    })
    expect(pauses).toBe(0)
    expect(patched.byId.get(42)!.detail.toString()).toBe('{"edited": true}')
    expect(previous.byId.get(42)!.detail.toString()).not.toBe('{"edited": true}')
    expect(patched.byId).toBeInstanceOf(PatchedMap)
    expect((patched.byId as PatchedMap<number, PageRecord>).base).toBe(previous.byId)
    expect(patched.childrenOf.get(4)!.map((page) => page.title)).toContain('Edited')
    expect(patched.childrenOf.get(5)).toBe(previous.childrenOf.get(5))
    // The page list too: every other position reads the very record the previous list holds.
    const at42 = previous.byId.get(42)!.order
    expect(patched.pages.at(at42)).toBe(patched.byId.get(42))
    expect(previous.pages.at(at42)).toBe(previous.byId.get(42))
    for (const order of [0, at42 - 1, at42 + 1, 4_999]) expect(patched.pages.at(order)).toBe(previous.pages.at(order))
    expect(patched.fingerprint).not.toBe(previous.fingerprint)
    // Only the block holding page 42 was hashed again.
    const block = Math.floor(previous.byId.get(42)!.order / SLICE)
    expect(previous.fingerprintBlocks.length).toBe(Math.ceil(5_000 / SLICE))
    patched.fingerprintBlocks.forEach((digest, i) => {
      if (i === block) expect(digest).not.toBe(previous.fingerprintBlocks[i])
      else expect(digest).toBe(previous.fingerprintBlocks[i])
    })
  })

  it('writes flat maps again, a slice at a time, once the changes outgrow the overlay', async () => {
    const previous = buildSnapshot(wideTree(MAX_OVERLAY + 1_000), { version: 1, syncedAt: 0, dialect: DIALECT })
    const replaced = new Map(previous.pages.slice(1, MAX_OVERLAY + 2).map((record) => {
      const page = { ...carryOver(record), title: `Edited ${record.id}`, detail: `{"edited": ${record.id}}`, digest: undefined, from: undefined }
      return [page.id, page] as const
    }))
    let pauses = 0
    const patched = await patchSnapshotInSlices(previous, replaced, options, async () => {
      pauses++
    })
    expect(pauses).toBeGreaterThanOrEqual(2)
    expect(patched.byId).toBeInstanceOf(Map)
    expect(readable(patched)).toEqual(readable(buildSnapshot(previous.pages.slice().map((record) => replaced.get(record.id) ?? carryOver(record)), options)))
  })

  it('refuses a page that is new, moved, re-slugged or of another type: those need a full build', () => {
    const previous = buildSnapshot(wideTree(10), { version: 1, syncedAt: 0, dialect: DIALECT })
    const base = carryOver(previous.byId.get(3)!)
    for (const changed of [{ ...base, id: 999 }, { ...base, parentId: 2 }, { ...base, slug: 'elsewhere' }, { ...base, type: 'cms.Other' }]) {
      expect(() => patchSnapshot(previous, new Map([[changed.id, changed]]), options)).toThrow(TypeError)
    }
  })
})

describe('pages another tree holds', () => {
  const texts = (id: number, parentId: number | null, detail: string): SyncedPage => ({ ...page(id, parentId), detail })

  it('take the other tree\'s texts and detail when the bytes are the same, and their own otherwise', () => {
    const other = buildSnapshot([texts(7, null, '{"id": 7}'), texts(8, 7, '{"id": 8}'), texts(9, 7, '{"id": 9}')], { version: 1, syncedAt: 1, dialect: DIALECT })
    const twinOf = (id: number, digest: string) => {
      const record = other.byId.get(id)
      return record?.digest === digest ? record : undefined
    }
    const pages = [texts(1, null, '{"id": 1}'), texts(7, 1, '{"id": 7}'), texts(8, 7, '{"id": 8}'), texts(9, 7, '{"id": 9, "changed": true}')]
    const shared = buildSnapshot(pages, { version: 1, syncedAt: 1, dialect: DIALECT, twinOf })
    const alone = buildSnapshot(pages, { version: 1, syncedAt: 1, dialect: DIALECT })
    expect(shared.byId.get(8)!.detail).toBe(other.byId.get(8)!.detail)
    expect(shared.byId.get(8)!.listItem).toBe(other.byId.get(8)!.listItem)
    expect(shared.byId.get(9)!.detail).not.toBe(other.byId.get(9)!.detail)
    // Its own place in its own tree, and nothing a client sees differs from a build without sharing.
    expect(shared.byId.get(7)!.parentId).toBe(1)
    expect(shared.fingerprint).toBe(alone.fingerprint)
    expect(selectPages(shared, { types: null, filters: {} }).map((record) => [record.id, record.order, record.subtreeEnd])).toEqual(
      selectPages(alone, { types: null, filters: {} }).map((record) => [record.id, record.order, record.subtreeEnd]),
    )
  })
})
