import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeSnapshot, probeTree } from '../../test/helpers/make-snapshot.js'
import { scopeDigest, scopeOfParams, scopeOfSelection, type Scope } from './list-scope.js'
import {
  applyMutation, arbitraryScenario, sameResponses, scenarioSnapshots, scopeResponses, scopesOf, snapshotOf, type TreeModel,
} from './random-tree.test-helper.js'

/** 3 Home › {4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias} */
const probe = probeTree()

/** 9 is a live page below an unpublished one: the tree is not exact. */
const withOrphan = makeSnapshot([
  { id: 3, parent: null },
  { id: 4, parent: 3 },
  { id: 9, parent: null },
  { id: 5, parent: 3 },
])

const params = (query: string) => {
  const search = new URLSearchParams(query)
  return (key: string) => search.getAll(key).at(-1)
}

describe('scopeOfSelection', () => {
  it.each([
    [{ childOf: 4 }, { kind: 'children', id: 4 }],
    [{ descendantOf: 3 }, { kind: 'descendants', id: 3 }],
    [{ ancestorOf: 6 }, { kind: 'ancestors', id: 6 }],
  ])('one tree filter on an existing page scopes to it: %o', (selection, scope) => {
    expect(scopeOfSelection(probe, selection)).toEqual(scope)
  })

  it('is the whole tree without a tree filter', () => {
    expect(scopeOfSelection(probe, {})).toEqual({ kind: 'tree' })
  })

  it('is the whole tree with two tree filters', () => {
    expect(scopeOfSelection(probe, { childOf: 3, ancestorOf: 6 })).toEqual({ kind: 'tree' })
    expect(scopeOfSelection(probe, { descendantOf: 3, ancestorOf: 6 })).toEqual({ kind: 'tree' })
  })

  it('is the whole tree for a page that is not in the snapshot', () => {
    expect(scopeOfSelection(probe, { childOf: 999 })).toEqual({ kind: 'tree' })
    expect(scopeOfSelection(probe, { ancestorOf: 999 })).toEqual({ kind: 'tree' })
  })

  it('keeps children but widens descendants and ancestors to the tree when the tree is not exact', () => {
    expect(scopeOfSelection(withOrphan, { childOf: 3 })).toEqual({ kind: 'children', id: 3 })
    expect(scopeOfSelection(withOrphan, { descendantOf: 3 })).toEqual({ kind: 'tree' })
    expect(scopeOfSelection(withOrphan, { ancestorOf: 5 })).toEqual({ kind: 'tree' })
  })
})

describe('scopeOfParams', () => {
  it.each([
    ['child_of=4', { kind: 'children', id: 4 }],
    ['descendant_of=3&fields=title', { kind: 'descendants', id: 3 }],
    ['ancestor_of=6&search=x', { kind: 'ancestors', id: 6 }],
    ['child_of=04', { kind: 'children', id: 4 }],
    ['child_of=999&child_of=4', { kind: 'children', id: 4 }],
  ])('a plain decimal id of an existing page scopes to it: ?%s', (query, scope) => {
    expect(scopeOfParams(probe, params(query))).toEqual(scope)
  })

  it.each([
    '',
    'search=alpha',
    'child_of=root',
    'descendant_of=root',
    'child_of=%204',
    'child_of=%2B4',
    'child_of=-4',
    'child_of=4.0',
    'child_of=0_4',
    'child_of=',
    'child_of=999',
    'child_of=9007199254740996',
    'child_of=4&descendant_of=3',
    'child_of=4&ancestor_of=',
    'child_of=4&child_of=abc',
  ])('anything else is the whole tree: ?%s', (query) => {
    expect(scopeOfParams(probe, params(query))).toEqual({ kind: 'tree' })
  })

  it('widens descendants and ancestors to the tree when the tree is not exact', () => {
    expect(scopeOfParams(withOrphan, params('child_of=3'))).toEqual({ kind: 'children', id: 3 })
    expect(scopeOfParams(withOrphan, params('descendant_of=3'))).toEqual({ kind: 'tree' })
    expect(scopeOfParams(withOrphan, params('ancestor_of=5'))).toEqual({ kind: 'tree' })
  })
})

/** 1 › {2 › {4, 5}, 3 › {6}} */
const small: TreeModel = {
  rootId: 1,
  pages: new Map([
    [1, { id: 1, parentId: null, children: [2, 3], type: 'home.HomePage', title: 'Home', slug: 'home', showInMenus: false }],
    [2, { id: 2, parentId: 1, children: [4, 5], type: 'blog.BlogPage', title: 'Blog', slug: 'blog', showInMenus: true }],
    [3, { id: 3, parentId: 1, children: [6], type: 'blog.BlogPage', title: 'Alpha', slug: 'alpha', showInMenus: true }],
    [4, { id: 4, parentId: 2, children: [], type: 'blog.BlogPage', title: 'Alpha', slug: 'alpha', showInMenus: false }],
    [5, { id: 5, parentId: 2, children: [], type: 'blog.BlogPage', title: 'Blog', slug: 'beta', showInMenus: false }],
    [6, { id: 6, parentId: 3, children: [], type: 'blog.BlogPage', title: 'Home', slug: 'home', showInMenus: false }],
  ]),
}

describe('scopeDigest', () => {
  const previous = snapshotOf(small, 1)

  it('names the scope, so two scopes never share a digest', () => {
    const all = [...scopesOf(2), { kind: 'tree' } as Scope].map((scope) => scopeDigest(previous, scope))
    expect(new Set(all).size).toBe(all.length)
    expect(all.map((digest) => digest.split(/[:!]/)[0])).toEqual(['page-2', 'children-2', 'descendants-2', 'ancestors-2', 'tree'])
  })

  it('is the fingerprint for the tree and the digest for a page', () => {
    expect(scopeDigest(previous, { kind: 'tree' })).toBe(`tree:${previous.fingerprint}`)
    expect(scopeDigest(previous, { kind: 'page', id: 4 })).toBe(`page-4:${previous.byId.get(4)!.digest}`)
  })

  it('is the same for an identical rebuild', () => {
    const rebuilt = snapshotOf(small, 2)
    for (const id of [1, 2, 3, 4, 5, 6]) {
      for (const scope of scopesOf(id)) expect(scopeDigest(rebuilt, scope)).toBe(scopeDigest(previous, scope))
    }
  })

  it('keeps the scopes an edit does not reach, and changes those it does', () => {
    // Page 6's title: only 6 shows it (it has no children whose details embed it).
    const next = snapshotOf(applyMutation(small, { kind: 'edit', target: 5, field: 'title', value: 1 }), 2)
    expect(next.byId.get(6)!.title).toBe('Blog')
    const same = (scope: Scope) => scopeDigest(previous, scope) === scopeDigest(next, scope)
    expect(same({ kind: 'children', id: 2 })).toBe(true)
    expect(same({ kind: 'descendants', id: 2 })).toBe(true)
    expect(same({ kind: 'ancestors', id: 6 })).toBe(true)
    expect(same({ kind: 'page', id: 3 })).toBe(true)
    expect(same({ kind: 'page', id: 6 })).toBe(false)
    expect(same({ kind: 'children', id: 3 })).toBe(false)
    expect(same({ kind: 'descendants', id: 1 })).toBe(false)
    expect(same({ kind: 'tree' })).toBe(false)
  })

  it('changes a children digest when siblings are reordered', () => {
    const next = snapshotOf(applyMutation(small, { kind: 'reorder', parent: 0, from: 0, to: 1 }), 2)
    expect(next.childrenOf.get(1)!.map((page) => page.id)).toEqual([3, 2])
    expect(scopeDigest(next, { kind: 'children', id: 1 })).not.toBe(scopeDigest(previous, { kind: 'children', id: 1 }))
    expect(scopeDigest(next, { kind: 'children', id: 2 })).toBe(scopeDigest(previous, { kind: 'children', id: 2 }))
  })

  it('falls back to the fingerprint for a page that is not in the snapshot', () => {
    expect(scopeDigest(previous, { kind: 'children', id: 99 })).toBe(`children-99!${previous.fingerprint}`)
    expect(scopeDigest(previous, { kind: 'page', id: 99 })).toBe(`page-99!${previous.fingerprint}`)
  })

  it('falls back to the fingerprint for descendants and ancestors in a tree that is not exact', () => {
    expect(scopeDigest(withOrphan, { kind: 'descendants', id: 3 })).toBe(`descendants-3!${withOrphan.fingerprint}`)
    expect(scopeDigest(withOrphan, { kind: 'ancestors', id: 5 })).toBe(`ancestors-5!${withOrphan.fingerprint}`)
    expect(scopeDigest(withOrphan, { kind: 'children', id: 3 }).startsWith('children-3:')).toBe(true)
  })

  it('answers a repeated question from its memo', () => {
    const first = scopeDigest(previous, { kind: 'descendants', id: 1 })
    expect(scopeDigest(previous, { kind: 'descendants', id: 1 })).toBe(first)
  })
})

describe('scopeDigest property: an equal digest means byte-identical responses', () => {
  it('for every scope of every surviving page, under random edits, moves, deletions, additions and reorders', () => {
    let equalScoped = 0
    let differentScoped = 0
    fc.assert(
      fc.property(arbitraryScenario(), (scenario) => {
        const { previous, next } = scenarioSnapshots(scenario)
        const scopes: Scope[] = [{ kind: 'tree' }]
        for (const page of previous.pages) if (next.byId.has(page.id)) scopes.push(...scopesOf(page.id))
        for (const scope of scopes) {
          if (scopeDigest(previous, scope) !== scopeDigest(next, scope)) {
            differentScoped++
            continue
          }
          if (scope.kind !== 'tree') equalScoped++
          const before = scopeResponses(previous, scope)
          const after = scopeResponses(next, scope)
          if (!sameResponses(before, after)) {
            throw new Error(`${scope.kind} ${'id' in scope ? scope.id : ''}: equal digests, different bytes`)
          }
        }
      }),
      { numRuns: 150 },
    )
    // The property is not vacuous: both outcomes happen often.
    expect(equalScoped).toBeGreaterThan(100)
    expect(differentScoped).toBeGreaterThan(100)
  })
})
