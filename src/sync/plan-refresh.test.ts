import { describe, expect, it } from 'vitest'
import { makeSnapshot, type PageSpec } from '../../test/helpers/make-snapshot.js'
import { planRefresh, type ListedPage } from './plan-refresh.js'

// 1 › {2 › {4, 5}, 3}
const TREE: PageSpec[] = [
  { id: 1, parent: null },
  { id: 2, parent: 1 },
  { id: 4, parent: 2 },
  { id: 5, parent: 2 },
  { id: 3, parent: 1 },
]

/** The listing of the snapshot as it stands (makeSnapshot's items are `{"id": N}`), with edits. */
function listing(specs: Array<{ id: number; item?: string; htmlUrl?: string | null; flags?: ListedPage['flags'] }>): ListedPage[] {
  return specs.map((spec) => ({
    id: spec.id,
    type: 'home.BlogPage',
    title: `Page ${spec.id}`,
    slug: `page-${spec.id}`,
    htmlUrl: spec.htmlUrl === undefined ? `http://site/${spec.id}/` : spec.htmlUrl,
    listItem: spec.item ?? `{"id": ${spec.id}}`,
    ...(spec.flags ? { flags: spec.flags } : {}),
  }))
}

const ids = (pages: readonly ListedPage[]) => pages.map((p) => p.id)

describe('planRefresh', () => {
  const previous = makeSnapshot(TREE)

  it('fetches nothing when the listing is what the snapshot holds', () => {
    const plan = planRefresh(previous, listing([{ id: 1 }, { id: 2 }, { id: 4 }, { id: 5 }, { id: 3 }]), new Set())
    expect(plan.fetch).toEqual([])
    expect(plan.removed).toEqual([])
  })

  it('fetches a changed item and, when its item text changed, its children', () => {
    const plan = planRefresh(previous, listing([{ id: 1 }, { id: 2, item: '{"id": 2, "title": "new"}' }, { id: 4 }, { id: 5 }, { id: 3 }]), new Set())
    expect(ids(plan.fetch)).toEqual([2, 4, 5])
    expect(plan.reasons).toMatchObject({ changed: 1, 'parent-changed': 2 })
  })

  it('fetches a re-flagged page alone: flags are not in its children\'s details', () => {
    const flags = { showInMenus: true, seoTitle: '', searchDescription: '' }
    const plan = planRefresh(previous, listing([{ id: 1 }, { id: 2, flags }, { id: 4 }, { id: 5 }, { id: 3 }]), new Set())
    expect(ids(plan.fetch)).toEqual([2])
  })

  it('fetches new pages, requested pages, and the children of removed ones', () => {
    const plan = planRefresh(previous, listing([{ id: 1 }, { id: 4 }, { id: 5 }, { id: 3 }, { id: 9 }]), new Set([3, 77]))
    expect(ids(plan.fetch)).toEqual([4, 5, 3, 9])
    expect(plan.removed).toEqual([2])
    expect(plan.reasons).toMatchObject({ new: 1, requested: 1, 'parent-removed': 2 })
  })

  it('fetches parentless pages again when a page appears: their parent may be back', () => {
    // 5 lost its (unpublished) parent 2.
    const orphaned = makeSnapshot([{ id: 1, parent: null }, { id: 5, parent: null }, { id: 3, parent: 1 }])
    const plan = planRefresh(orphaned, listing([{ id: 1 }, { id: 2 }, { id: 5 }, { id: 3 }]), new Set())
    expect(ids(plan.fetch)).toEqual([2, 5])
  })

  it('fetches a page without a URL whose place in tree order changed', () => {
    const plan = planRefresh(previous, listing([{ id: 1 }, { id: 2 }, { id: 5, htmlUrl: null }, { id: 4 }, { id: 3 }]), new Set())
    expect(ids(plan.fetch)).toEqual([5])
    // With a URL, the place alone says nothing (a reorder among siblings changes no detail).
    expect(planRefresh(previous, listing([{ id: 1 }, { id: 2 }, { id: 5 }, { id: 4 }, { id: 3 }]), new Set()).fetch).toEqual([])
  })
})
