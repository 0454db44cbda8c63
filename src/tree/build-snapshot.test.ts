import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeSnapshot, type PageSpec } from '../../test/helpers/make-snapshot.js'
import { findTreeProblems, TreeInconsistentError, type SyncedPage } from './build-snapshot.js'
import { selectPages } from './select-pages.js'

const page = (id: number, parentId: number | null): SyncedPage => ({
  id, parentId, type: 'cms.GenericPage', title: `t${id}`, slug: `s${id}`, showInMenus: true, seoTitle: '', searchDescription: '',
  listItem: '{}', detail: '{}',
})

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
          const treeOrder = (pred: (id: number) => boolean) => snapshot.pages.map((p) => p.id).filter(pred)
          expect(select({ descendantOf: target.id })).toEqual(treeOrder((id) => isAncestor(target.id, id)))
          expect(select({ ancestorOf: target.id })).toEqual(treeOrder((id) => isAncestor(id, target.id)))
          expect(select({ childOf: target.id })).toEqual(treeOrder((id) => parentOf.get(id) === target.id))
        }
      }),
    )
  })
})
