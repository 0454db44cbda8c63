/**
 * Builds small snapshots for unit tests from a compact description of a tree.
 */
import { buildSnapshot, type SyncedPage } from '../../src/tree/build-snapshot.js'
import type { Dialect, Snapshot } from '../../src/tree/snapshot.js'

export interface PageSpec {
  id: number
  parent: number | null
  type?: string
  title?: string
  slug?: string
  showInMenus?: boolean
  seoTitle?: string
  searchDescription?: string
}

export const DEFAULT_DIALECT: Dialect = { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' }

/** Pages must be given in tree order (pre-order), like the CMS's listing. */
export function makeSnapshot(specs: PageSpec[], dialect: Partial<Dialect> = {}, version = 1): Snapshot {
  const pages: SyncedPage[] = specs.map((spec) => ({
    id: spec.id,
    type: spec.type ?? 'home.BlogPage',
    title: spec.title ?? `Page ${spec.id}`,
    slug: spec.slug ?? `page-${spec.id}`,
    showInMenus: spec.showInMenus ?? false,
    seoTitle: spec.seoTitle ?? '',
    searchDescription: spec.searchDescription ?? '',
    parentId: spec.parent,
    listItem: `{"id": ${spec.id}}`,
    detail: `{"id": ${spec.id}}`,
  }))
  return buildSnapshot(pages, { version, syncedAt: 0, dialect: { ...DEFAULT_DIALECT, ...dialect } })
}

/** The tree real Wagtail was probed with (`test/fake-wagtail/probe-tree.ts`): 3 Home › {4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias}. */
export function probeTree(dialect: Partial<Dialect> = {}): Snapshot {
  return makeSnapshot(
    [
      { id: 3, parent: null, type: 'home.HomePage', title: 'Home', slug: 'homepage' },
      { id: 4, parent: 3, title: 'Blog One ü ☃', slug: 'blog-one', showInMenus: true, seoTitle: 'SEO', searchDescription: 'desc' },
      { id: 6, parent: 4, title: 'Child', slug: 'child' },
      { id: 5, parent: 3, title: 'Alpha', slug: 'alpha' },
      { id: 8, parent: 3, title: 'Alpha', slug: 'alpha-alias' },
    ],
    dialect,
  )
}
