/**
 * Builds an immutable {@link Snapshot} from one sync's pages, or refuses: a snapshot is the CMS as
 * it was at one moment, never a mix, so every inconsistency fails the whole build (docs/architecture.md#decisions:
 * "Never publish a bad tree").
 * @module
 */
import { createHash } from 'node:crypto'
import { bytesCopier } from '../json/byte-slabs.js'
import { ownBytes, ownString } from '../json/own-string.js'
import { PageList, type PageSequence } from './page-list.js'
import { patchMap } from './patched-map.js'
import { inSlices, runToEnd, runWithPauses, SLICE, type Pause, type Steps } from './slices.js'
import { bytesOf, type DetailBody } from './detail-body.js'
import { StoredPage } from './stored-page.js'
import type { Dialect, PageFields, PageRecord, Snapshot } from './snapshot.js'
import type { TranslationGroups } from './translations.js'

/** One page as the sync delivers it: fields for the index, and its already-rewritten texts. */
export interface SyncedPage extends PageFields {
  /** The listing item's text, formatted for depth 2 of a list envelope. */
  readonly listItem: string
  /** The item as a listing filtered to this page's one type shows it, when that differs. */
  readonly typedListItem?: string
  /** Not a string: a detail kept from the previous snapshot or loaded from storage, reused as is with its digest. */
  readonly detail: string | DetailBody
  /** The page's {@link pageDigest}, when it is already known (a page carried over unchanged). */
  readonly digest?: string
  /**
   * The record this page was carried over from. With the same digest, place and subtree, the new
   * snapshot keeps that very record: nothing is allocated for an unchanged page, and comparing two
   * snapshots can skip it by identity.
   */
  readonly from?: PageRecord
}

/**
 * A digest of everything a client can see of one page: its listing items and its detail. Equal
 * digests mean the page's bytes did not change between two snapshots.
 */
export function pageDigest(listItem: string, typedListItem: string | undefined, detail: string | DetailBody): string {
  const body = typeof detail === 'string' ? detail : bytesOf(detail)
  // Owned: a slice of the full digest would keep all of its 43 characters alive per page.
  return ownString(createHash('sha256').update(listItem).update('\u0000').update(typedListItem ?? '').update('\u0000').update(body).digest('base64url').slice(0, 22))
}

/**
 * A snapshot's page as a sync delivers it again: the same texts, and the detail Buffer and digest
 * reused, so carrying an unchanged page into the next snapshot copies and hashes nothing.
 * Strings are kept as they are: the sync made them own their characters when it read them
 * (`ownString`), so a snapshot never pins a response body.
 */
export function carryOver(record: PageRecord): SyncedPage {
  return {
    id: record.id,
    type: record.type,
    title: record.title,
    slug: record.slug,
    showInMenus: record.showInMenus,
    seoTitle: record.seoTitle,
    searchDescription: record.searchDescription,
    parentId: record.parentId,
    listItem: record.listItem,
    ...(record.typedListItem === undefined ? {} : { typedListItem: record.typedListItem }),
    detail: record.detail,
    digest: record.digest,
    from: record,
  }
}

export class TreeInconsistentError extends Error {
  override readonly name = 'TreeInconsistentError'
  constructor(readonly problems: readonly string[]) {
    super(`page tree is inconsistent: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`)
  }
}

function* treeProblemSteps(pages: readonly SyncedPage[]): Steps<string[]> {
  const problems: string[] = []
  if (pages.length === 0) return ['the CMS lists no pages']
  const indexOf = new Map<number, number>()
  yield* inSlices(pages.length, (from, to) => {
    for (let i = from; i < to; i++) {
      const id = pages[i]!.id
      if (indexOf.has(id)) problems.push(`page ${id} is listed twice`)
      else indexOf.set(id, i)
    }
  })
  if (pages[0]!.parentId !== null) problems.push(`the first page in tree order (${pages[0]!.id}) is not the site root`)
  // When every parent comes before its child (tree order always does), no chain can loop.
  let parentsFirst = true
  yield* inSlices(pages.length, (from, to) => {
    for (let i = from; i < to; i++) {
      const page = pages[i]!
      if (page.parentId === null) continue
      const parentAt = indexOf.get(page.parentId)
      if (parentAt === undefined) problems.push(`page ${page.id} names parent ${page.parentId}, which is not in the tree`)
      else if (parentAt >= i) parentsFirst = false
    }
  })
  if (parentsFirst) return problems
  const parentOf = (id: number): number | null => {
    const at = indexOf.get(id)
    return at === undefined ? null : pages[at]!.parentId
  }
  // Walk each chain once; a chain that comes back to a page on the current walk is a cycle.
  const done = new Set<number>()
  const walking = new Set<number>()
  yield* inSlices(pages.length, (from, to) => {
    for (let i = from; i < to; i++) {
      const walk: number[] = []
      let id: number | null = pages[i]!.id
      while (id !== null && !done.has(id)) {
        if (walking.has(id)) {
          problems.push(`pages ${walk.slice(walk.indexOf(id)).join(' → ')} form a cycle`)
          break
        }
        walking.add(id)
        walk.push(id)
        id = parentOf(id)
      }
      for (const seen of walk) {
        walking.delete(seen)
        done.add(seen)
      }
    }
  })
  return problems
}

/**
 * Subtree ends from a pre-order walk; `undefined` when the order is not a pre-order of the
 * parent links (a live page below an unpublished one has a `null` parent mid-tree).
 */
function* subtreeEndSteps(pages: readonly SyncedPage[]): Steps<number[] | undefined> {
  const ends = new Array<number>(pages.length).fill(0)
  const stack: number[] = []
  let preOrder = true
  yield* inSlices(pages.length, (from, to) => {
    for (let i = from; preOrder && i < to; i++) {
      const parentId = pages[i]!.parentId
      while (stack.length > 0 && pages[stack[stack.length - 1]!]!.id !== parentId) ends[stack.pop()!] = i
      if (stack.length === 0 && i > 0) preOrder = false
      else stack.push(i)
    }
  })
  if (!preOrder) return undefined
  while (stack.length > 0) ends[stack.pop()!] = pages.length
  return ends
}

export interface BuildOptions {
  readonly version: number
  readonly syncedAt: number
  /** When every detail was last fetched; defaults to `syncedAt` (a full sync). */
  readonly fullSyncedAt?: number
  readonly dialect: Dialect
  /** The translation groups the snapshot keeps (and its fingerprint hashes); none: not learned. */
  readonly translations?: TranslationGroups
  /**
   * A record of this page with these very bytes (`digest`) that another tree already holds (a page
   * below two Sites' roots): its texts and detail are taken instead of copies, so the page is
   * stored once however many Sites' trees hold it.
   */
  readonly twinOf?: TwinLookup
}

export type TwinLookup = (id: number, digest: string) => PageRecord | undefined

/** The record for `page` at `order`: its carried-over record when nothing about it changed. */
function recordOf(page: SyncedPage, order: number, subtreeEnd: number, digest: string, copyBytes: (text: string) => Buffer, twinOf?: TwinLookup): PageRecord {
  if (page instanceof StoredPage && page.placed(order, subtreeEnd)) return page
  const from = page.from
  if (
    from !== undefined && page.digest === from.digest && from.order === order && from.subtreeEnd === subtreeEnd &&
    from.parentId === page.parentId && from.listItem === page.listItem && from.typedListItem === page.typedListItem && from.detail === page.detail
  ) {
    return from
  }
  const twin = twinOf?.(page.id, digest)
  if (twin !== undefined) {
    return {
      id: page.id, type: page.type, title: page.title, slug: page.slug, showInMenus: page.showInMenus, seoTitle: page.seoTitle,
      searchDescription: page.searchDescription, parentId: page.parentId, order, subtreeEnd,
      listItem: twin.listItem, typedListItem: twin.typedListItem, detail: twin.detail, digest: twin.digest,
    }
  }
  return {
    id: page.id,
    type: page.type,
    title: page.title,
    slug: page.slug,
    showInMenus: page.showInMenus,
    seoTitle: page.seoTitle,
    searchDescription: page.searchDescription,
    parentId: page.parentId,
    order,
    subtreeEnd,
    listItem: page.listItem,
    typedListItem: page.typedListItem,
    detail: typeof page.detail === 'string' ? copyBytes(page.detail) : page.detail,
    digest,
  }
}

/** What the fingerprint hashes of one page, in tree order: its place and its digest. */
function fingerprintLine(id: number, parentId: number | null, digest: string): string {
  return `${id}:${parentId ?? ''}:${digest}\u0000`
}

/**
 * Pages per fingerprint block: the pages `[k·SLICE, (k+1)·SLICE)` in tree order are block `k`, the
 * same ranges a build's slices cover, so a build hashes each block in the slice that makes it.
 */
const FINGERPRINT_BLOCK = SLICE

/** Block `block`'s digest: its pages' fingerprint lines, in tree order, hashed in one call (not 2,048 calls into C++). */
function blockOf(records: PageSequence<PageRecord>, block: number): string {
  let lines = ''
  const to = Math.min(records.length, (block + 1) * FINGERPRINT_BLOCK)
  for (let order = block * FINGERPRINT_BLOCK; order < to; order++) {
    const record = records.at(order)!
    lines += fingerprintLine(record.id, record.parentId, record.digest)
  }
  return createHash('sha256').update(lines).digest('base64url')
}

type SnapshotParts = Pick<Snapshot, 'pages' | 'byId' | 'childrenOf' | 'rootId' | 'byPath' | 'types' | 'treeExact' | 'patched'>

/**
 * The finished snapshot: the fingerprint hashes the block digests, the dialect and the translation
 * groups (they decide `translation_of` answers), and nothing changes the snapshot afterwards.
 */
function sealed(options: BuildOptions, blocks: readonly string[], parts: SnapshotParts): Snapshot {
  const hash = createHash('sha256')
  for (const block of blocks) hash.update(block)
  hash.update(JSON.stringify(options.dialect))
  // Hashed only when learned: snapshots of Sites without translations keep their fingerprints.
  if (options.translations !== undefined) hash.update(`\u0000translations${JSON.stringify(options.translations)}`)
  return Object.freeze({
    version: options.version,
    syncedAt: options.syncedAt,
    fullSyncedAt: options.fullSyncedAt ?? options.syncedAt,
    fingerprint: hash.digest('base64url'),
    fingerprintBlocks: Object.freeze(blocks),
    ...parts,
    dialect: options.dialect,
    ...(options.translations === undefined ? {} : { translations: options.translations }),
  })
}

/**
 * `snapshot` with other translation groups: the same pages and records, sealed again (the blocks
 * are kept, so this costs a hash of one digest per block). `version` is the new snapshot's.
 */
export function withTranslations(snapshot: Snapshot, translations: TranslationGroups | undefined, version: number): Snapshot {
  const { pages, byId, childrenOf, rootId, byPath, types, treeExact, patched } = snapshot
  return sealed(
    { version, syncedAt: snapshot.syncedAt, fullSyncedAt: snapshot.fullSyncedAt, dialect: snapshot.dialect, ...(translations === undefined ? {} : { translations }) },
    snapshot.fingerprintBlocks,
    { pages, byId, childrenOf, rootId, byPath, types, treeExact, ...(patched === undefined ? {} : { patched }) },
  )
}

/** Builds the snapshot in one go (tests, tools, small trees). */
export function buildSnapshot(pages: readonly SyncedPage[], options: BuildOptions): Snapshot {
  return runToEnd(buildSteps(pages, options))
}

/**
 * Builds the snapshot a slice of pages at a time, calling `pause` between slices, so that the
 * requests served meanwhile wait for one slice, never for the whole build (p99 during a
 * swap stays low). `pause` is injected (the sync passes a `setImmediate` turn); the result is the same as
 * {@link buildSnapshot}'s.
 */
export function buildSnapshotInSlices(pages: readonly SyncedPage[], options: BuildOptions, pause: Pause): Promise<Snapshot> {
  return runWithPauses(buildSteps(pages, options), pause)
}

function* buildSteps(pages: readonly SyncedPage[], options: BuildOptions): Steps<Snapshot> {
  const problems = yield* treeProblemSteps(pages)
  if (problems.length > 0) throw new TreeInconsistentError(problems)

  const ends = yield* subtreeEndSteps(pages)
  // The fingerprint hashes each page's digest, not its bytes: a page carried over unchanged costs
  // nothing to hash again (an incremental sync rebuilds only what changed).
  const blocks: string[] = []
  const records = new Array<PageRecord>(pages.length)
  const byId = new Map<number, PageRecord>()
  const childrenOf = new Map<number, PageRecord[]>()
  const types = new Map<string, string>()
  // Details as text (a snapshot loaded from Redis or a file) are packed into slabs (`byte-slabs.ts`).
  const copyBytes = bytesCopier(pages.length)
  yield* inSlices(pages.length, (from, to) => {
    for (let order = from; order < to; order++) {
      const page = pages[order]!
      const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
      const record = recordOf(page, order, ends ? ends[order]! : order + 1, digest, copyBytes, options.twinOf)
      records[order] = record
      byId.set(record.id, record)
      if (record.parentId !== null) {
        const siblings = childrenOf.get(record.parentId)
        if (siblings) siblings.push(record)
        else childrenOf.set(record.parentId, [record])
      }
      if (!types.has(record.type)) {
        const [app = '', model = ''] = record.type.split('.')
        types.set(record.type, `${app}.${model.toLowerCase()}`)
      }
    }
    // Each slice is one fingerprint block: hashed once, as a patch hashes it again.
    blocks[from / FINGERPRINT_BLOCK] = blockOf(records, from / FINGERPRINT_BLOCK)
  })

  const root = records[0]!
  const byPath = new Map<string, number>([['', root.id]])
  const pathOf = new Map<number, string>([[root.id, '']])
  // Parents come before children in tree order, so one pass resolves every reachable path.
  yield* inSlices(records.length, (from, to) => {
    for (let order = Math.max(1, from); order < to; order++) {
      const record = records[order]!
      if (record.parentId === null) continue
      const parentPath = pathOf.get(record.parentId)
      if (parentPath === undefined) continue
      const path = parentPath === '' ? record.slug : `${parentPath}/${record.slug}`
      pathOf.set(record.id, path)
      if (!byPath.has(path)) byPath.set(path, record.id)
    }
  })

  return sealed(options, blocks, {
    pages: PageList.of(records),
    byId,
    childrenOf,
    rootId: root.id,
    byPath,
    // Keyed by the lower-cased name (see Snapshot.types); collected the other way round above so
    // that each distinct type is split once, not once per page.
    types: new Map([...types].map(([canonical, lower]) => [lower, canonical])),
    treeExact: ends !== undefined,
  })
}

/**
 * The snapshot `previous` would be with some pages replaced in place: the same place in the tree
 * (parent, slug, type, order), new texts and fields. Nothing is recomputed from every page: the
 * slug paths, types and subtree ends cannot have changed; the page list and the id and sibling
 * maps are `previous`'s with the changes laid over them (`page-list.ts`, `patched-map.ts`), so no
 * page array is copied; the fingerprint rehashes only the blocks holding a replaced page. A PURGE
 * of one page at 100,000 pages costs what that page touches. The result reads exactly as what
 * {@link buildSnapshot} makes of the same pages (a property test holds it to that).
 *
 * Throws `TypeError` for a replacement that moved, was renamed in its slug, changed type or is not
 * in `previous`: those change the tree's shape and need a full build.
 */
export function patchSnapshot(previous: Snapshot, replaced: ReadonlyMap<number, SyncedPage>, options: BuildOptions): Snapshot {
  return runToEnd(patchSteps(previous, replaced, options))
}

/** {@link patchSnapshot}, giving the event loop back between slices (when an overlay is flattened). */
export function patchSnapshotInSlices(previous: Snapshot, replaced: ReadonlyMap<number, SyncedPage>, options: BuildOptions, pause: Pause): Promise<Snapshot> {
  return runWithPauses(patchSteps(previous, replaced, options), pause)
}

function* patchSteps(previous: Snapshot, replaced: ReadonlyMap<number, SyncedPage>, options: BuildOptions): Steps<Snapshot> {
  const recordChanges = new Map<number, PageRecord>()
  const byIdChanges = new Map<number, PageRecord>()
  const siblingChanges = new Map<number, PageRecord[]>()
  const touchedBlocks = new Set<number>()
  for (const page of replaced.values()) {
    const before = previous.byId.get(page.id)
    if (before === undefined || before.parentId !== page.parentId || before.slug !== page.slug || before.type !== page.type) {
      throw new TypeError(`page ${page.id} cannot be replaced in place: it is new, or its parent, slug or type changed`)
    }
    const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
    const record = recordOf(page, before.order, before.subtreeEnd, digest, ownBytes)
    recordChanges.set(before.order, record)
    byIdChanges.set(record.id, record)
    touchedBlocks.add(Math.floor(before.order / FINGERPRINT_BLOCK))
    if (record.parentId !== null) {
      const siblings = siblingChanges.get(record.parentId) ?? previous.childrenOf.get(record.parentId)!
      siblingChanges.set(record.parentId, siblings.map((sibling) => (sibling.id === record.id ? record : sibling)))
    }
  }
  const records = previous.pages.with(recordChanges)
  const blocks = previous.fingerprintBlocks.slice()
  for (const block of touchedBlocks) blocks[block] = blockOf(records, block)
  return sealed(options, blocks, {
    pages: records,
    byId: yield* patchMap(previous.byId, byIdChanges),
    childrenOf: yield* patchMap(previous.childrenOf, siblingChanges),
    rootId: previous.rootId,
    // Slug paths and types depend on slugs, parents and types, which a replacement keeps.
    byPath: previous.byPath,
    types: previous.types,
    treeExact: previous.treeExact,
    patched: Object.freeze({ from: previous.fingerprint, ids: Object.freeze([...byIdChanges.keys()]) }),
  })
}
