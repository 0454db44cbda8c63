/**
 * What a response depends on: its scope in the page tree, and a digest of exactly that part.
 *
 * Content-addressed cache keys rest on it: a cached list body or CMS answer keyed by
 * {@link scopeDigest} survives a sync that changed nothing it shows, and misses after one that
 * did, on every instance alike, without any explicit invalidation. Wagtail itself purges only a
 * published page's URL and detail URL (docs/wagtail-compatibility.md#what-wagtail-purges), never
 * listings and never on moves, which is why the dependency has to be worked out from the tree
 * here. CDN keys (`answer-keys.ts`) name finer inputs than a scope, for purges as precise as the
 * change.
 *
 * A scope is conservative: when a response's dependency cannot be named precisely (no tree
 * filter, several of them, an id we cannot read, a tree whose subtrees are not exact) it is the
 * whole tree, whose digest is the snapshot's fingerprint.
 * @module
 */
import { createHash } from 'node:crypto'
import type { PageSelection } from './page-selection.js'
import type { PageRecord, Snapshot } from './snapshot.js'
import { createPerSnapshot } from './snapshot-memo.js'

export type Scope =
  /** Depends on the whole tree: no tree filter, several of them, search, find… */
  | { readonly kind: 'tree' }
  /** One page's detail. */
  | { readonly kind: 'page'; readonly id: number }
  /** `child_of=id` and no other tree filter. */
  | { readonly kind: 'children'; readonly id: number }
  /** `descendant_of=id` and no other tree filter (only in an exact tree). */
  | { readonly kind: 'descendants'; readonly id: number }
  /** `ancestor_of=id` and no other tree filter (only in an exact tree). */
  | { readonly kind: 'ancestors'; readonly id: number }

export type TreeScopeKind = 'children' | 'descendants' | 'ancestors'

const TREE: Scope = Object.freeze({ kind: 'tree' })

/** The whole-tree scope (one shared frozen object). */
export const treeScope: Scope = TREE

/**
 * A scoped list for `id`, or the whole tree when the page is not in the snapshot, or when the
 * scope needs exact subtrees (descendants, ancestors) and the snapshot has orphans (the planner
 * reads those through, and the CMS's answer depends on pages we cannot see).
 */
function scopedOrTree(snapshot: Snapshot, kind: TreeScopeKind, id: number): Scope {
  if (!snapshot.byId.has(id)) return TREE
  if (kind !== 'children' && !snapshot.treeExact) return TREE
  return Object.freeze({ kind, id })
}

/**
 * The scope of a planned selection: exactly one of `childOf` / `descendantOf` / `ancestorOf` set,
 * naming a page in the snapshot, gives that scope; descendants and ancestors also need
 * `snapshot.treeExact`. Anything else is the whole tree. Type and field filters do not widen the
 * scope: they read only fields of the pages in it, which their digests cover.
 */
export function scopeOfSelection(
  snapshot: Snapshot,
  selection: Pick<PageSelection, 'childOf' | 'descendantOf' | 'ancestorOf'>,
): Scope {
  const { childOf, descendantOf, ancestorOf } = selection
  const set = (childOf !== undefined ? 1 : 0) + (descendantOf !== undefined ? 1 : 0) + (ancestorOf !== undefined ? 1 : 0)
  if (set !== 1) return TREE
  if (childOf !== undefined) return scopedOrTree(snapshot, 'children', childOf)
  if (descendantOf !== undefined) return scopedOrTree(snapshot, 'descendants', descendantOf)
  return scopedOrTree(snapshot, 'ancestors', ancestorOf!)
}

/** ASCII digits only. Leading zeros are fine (Python's `int('05')` is 5); signs, spaces, `_` are not. */
const PLAIN_DECIMAL = /^[0-9]+$/

/** A plain decimal page id, or `undefined` (also beyond 2^53, where `Number` would round). */
function plainId(raw: string): number | undefined {
  if (!PLAIN_DECIMAL.test(raw)) return undefined
  const value = Number(raw)
  return Number.isSafeInteger(value) ? value : undefined
}

const PARAM_KINDS: ReadonlyArray<readonly [string, TreeScopeKind]> = [
  ['child_of', 'children'],
  ['descendant_of', 'descendants'],
  ['ancestor_of', 'ancestors'],
]

/**
 * The scope of a request from its raw query parameters, as the client sent them (`get` returns
 * the last value of a key, or `undefined` when absent): for forwarded requests, which have no plan.
 * One of `child_of` / `descendant_of` / `ancestor_of` present, holding a plain decimal id
 * (`05` is 5) of a page in the snapshot, and neither of the other two present (even empty), gives
 * that scope, with the same `treeExact` rule as {@link scopeOfSelection}. Everything else —
 * `root`, ` 5 `, `+5`, `1_0`, unknown ids — is the whole tree: always safe, merely less shared.
 */
export function scopeOfParams(snapshot: Snapshot, get: (key: string) => string | undefined): Scope {
  let found: readonly [TreeScopeKind, string] | undefined
  for (const [key, kind] of PARAM_KINDS) {
    const raw = get(key)
    if (raw === undefined) continue
    if (found !== undefined) return TREE
    found = [kind, raw]
  }
  if (found === undefined) return TREE
  const id = plainId(found[1])
  return id === undefined ? TREE : scopedOrTree(snapshot, found[0], id)
}

/** Scope digests per snapshot and scope. */
const digests = createPerSnapshot<string>()

/** `tree`, `page-5`, `children-5`, …: the memo key, and the prefix that keeps scopes apart. */
export function scopeName(scope: Scope): string {
  return scope.kind === 'tree' ? 'tree' : `${scope.kind}-${scope.id}`
}

function hashRecords(records: Iterable<PageRecord>, withParent: boolean): string {
  const hash = createHash('sha256')
  for (const record of records) {
    hash.update(withParent ? `${record.id}:${record.digest}:${record.parentId ?? ''}\n` : `${record.id}:${record.digest}\n`)
  }
  return hash.digest('base64url').slice(0, 22)
}

/** The chain above a page, root first (what `ancestor_of` lists). */
function ancestorChain(snapshot: Snapshot, page: PageRecord): PageRecord[] {
  const chain: PageRecord[] = []
  for (let parentId = page.parentId; parentId !== null; ) {
    const parent = snapshot.byId.get(parentId)
    if (parent === undefined) break
    chain.push(parent)
    parentId = parent.parentId
  }
  return chain.reverse()
}

function computeDigest(snapshot: Snapshot, scope: Scope, name: string): string {
  if (scope.kind === 'tree') return `tree:${snapshot.fingerprint}`
  const page = snapshot.byId.get(scope.id)
  // No such page (a 404 or 400), or a subtree we cannot see whole: the answer may depend on
  // anything, so it is keyed like the tree. `!` keeps this apart from a real scoped digest.
  if (page === undefined || (scope.kind !== 'page' && scope.kind !== 'children' && !snapshot.treeExact)) {
    return `${name}!${snapshot.fingerprint}`
  }
  switch (scope.kind) {
    case 'page':
      return `${name}:${page.digest}`
    case 'children':
      return `${name}:${hashRecords(snapshot.childrenOf.get(page.id) ?? [], false)}`
    case 'descendants':
      // Parent links too: the same pages in the same order can still be a different subtree.
      return `${name}:${hashRecords(snapshot.pages.slice(page.order + 1, page.subtreeEnd), true)}`
    case 'ancestors':
      return `${name}:${hashRecords(ancestorChain(snapshot, page), false)}`
  }
}

/**
 * A short string that is equal for two snapshots exactly when what the scope covers is the same:
 * tree → the fingerprint; page → that page's digest; children → the ordered (id, digest) of the
 * children; descendants → the ordered (id, digest, parentId) of the subtree; ancestors → the
 * ordered (id, digest) of the chain above the page. Prefixed with the scope's name (`children-5:`)
 * so two scopes never share a digest. A page that is not in the snapshot, and descendants or
 * ancestors in a tree that is not exact, fall back to the fingerprint (`children-5!…`).
 *
 * The dialect is not part of a scoped digest (it is part of the fingerprint): a rendered list
 * does not depend on it. Memoised per snapshot.
 */
export function scopeDigest(snapshot: Snapshot, scope: Scope): string {
  const name = scopeName(scope)
  return digests(snapshot, name, () => computeDigest(snapshot, scope, name))
}
