/**
 * Surrogate keys (Fastly `Surrogate-Key`, Cloudflare `Cache-Tag`) derived from the page tree, so
 * a CDN in front of cms-shield can be purged by what changed rather than by URL.
 *
 * Wagtail purges only a published page's URL and its API detail URL (docs/wagtail-compatibility.md#what-wagtail-purges): never a listing,
 * never on a move or reorder. Every response here instead carries keys naming the scope it was
 * read from (`list-scope.ts`), and `tree-diff.ts` turns the difference between two snapshots into
 * the keys to purge, so that any response whose bytes changed carries at least one purged key.
 *
 * Vocabulary (lower-case, space- and comma-free tokens):
 * - `cms-pages`: every response (purge everything);
 * - `cms-endpoint-<name>`: every answer of one of the router's other endpoints (`images`, …);
 * - `cms-page-<id>`: the detail of a page;
 * - `cms-children-<id>`, `cms-descendants-<id>`, `cms-ancestors-<id>`: a list scoped by one tree filter;
 * - `cms-list`: an unscoped list (whole-tree scope: no tree filter, search, find…);
 * - `cms-section-<id>`: the site section a response lies in, the section of a page being its
 *   ancestor that is a child of the site root (the root's own section is the root; an orphan,
 *   whose chain does not reach the root, has none).
 * @module
 */
import type { Scope } from './list-scope.js'
import { scopeName } from './list-scope.js'
import { createPerSnapshot } from './snapshot-memo.js'
import type { Snapshot } from './snapshot.js'

export const ALL_PAGES_KEY = 'cms-pages'
export const LIST_KEY = 'cms-list'
export const pageKey = (id: number): string => `cms-page-${id}`
export const childrenKey = (id: number): string => `cms-children-${id}`
export const descendantsKey = (id: number): string => `cms-descendants-${id}`
export const ancestorsKey = (id: number): string => `cms-ancestors-${id}`
export const sectionKey = (id: number): string => `cms-section-${id}`
export const endpointKey = (name: string): string => `cms-endpoint-${name.toLowerCase()}`

/** Section of each page already walked, per snapshot (`null`: the page has none). */
const sections = new WeakMap<Snapshot, Map<number, number | null>>()

/**
 * The page's section: its ancestor (or itself) that is a child of `snapshot.rootId`; the root for
 * the root; `undefined` for a page not in the snapshot or not under the root. Memoised per
 * snapshot, so walking every page costs O(N) in all.
 */
export function sectionOf(snapshot: Snapshot, id: number): number | undefined {
  let memo = sections.get(snapshot)
  if (memo === undefined) {
    memo = new Map()
    sections.set(snapshot, memo)
  }
  const path: number[] = []
  let current: number | null = id
  let section: number | null
  for (;;) {
    if (current === null || !snapshot.byId.has(current)) {
      section = null
      break
    }
    if (current === snapshot.rootId) {
      // The last page walked below the root is the section of everything walked.
      section = path.length === 0 ? current : path[path.length - 1]!
      break
    }
    const known = memo.get(current)
    if (known !== undefined) {
      section = known
      break
    }
    path.push(current)
    current = snapshot.byId.get(current)!.parentId
  }
  if (path.length === 0 && section !== null) memo.set(id, section)
  for (const walked of path) memo.set(walked, section)
  return section ?? undefined
}

/** Keys per snapshot and scope: header values are built for every response. */
const keyMemo = createPerSnapshot<readonly string[]>()

function computeKeys(snapshot: Snapshot, scope: Scope): readonly string[] {
  if (scope.kind === 'tree') return [ALL_PAGES_KEY, LIST_KEY]
  const keys = [ALL_PAGES_KEY]
  const section = sectionOf(snapshot, scope.id)
  switch (scope.kind) {
    case 'page':
      keys.push(pageKey(scope.id))
      if (section !== undefined) keys.push(sectionKey(section))
      break
    case 'children':
    case 'descendants':
      keys.push(scope.kind === 'children' ? childrenKey(scope.id) : descendantsKey(scope.id))
      // The root's section would be a second name for "the root's detail": not a list's section.
      if (section !== undefined && scope.id !== snapshot.rootId) keys.push(sectionKey(section))
      break
    case 'ancestors':
      keys.push(ancestorsKey(scope.id))
      break
  }
  return keys
}

/**
 * The keys a response read from this scope carries: detail P → `cms-pages cms-page-P
 * cms-section-S`; children / descendants of X → `cms-pages cms-children-X` (or
 * `cms-descendants-X`) and X's section unless X is the root; ancestors of X → `cms-pages
 * cms-ancestors-X`; tree → `cms-pages cms-list`. A page missing from the snapshot gets no section.
 * O(depth) the first time, memoised per snapshot and scope.
 */
export function responseKeys(snapshot: Snapshot, scope: Scope): readonly string[] {
  return keyMemo(snapshot, scopeName(scope), () => Object.freeze(computeKeys(snapshot, scope)))
}

/**
 * The two header values for a set of keys: `Surrogate-Key` space-separated (Fastly), `Cache-Tag`
 * comma-separated (Cloudflare). Duplicates are dropped, the first occurrence keeps its place, so
 * keys from several scopes can be concatenated.
 */
export function tagHeaders(keys: readonly string[]): { 'surrogate-key': string; 'cache-tag': string } {
  const unique = [...new Set(keys)]
  return { 'surrogate-key': unique.join(' '), 'cache-tag': unique.join(',') }
}
