/**
 * Builds an immutable {@link Snapshot} from one sync's pages, or refuses: a snapshot is the CMS as
 * it was at one moment, never a mix, so every inconsistency fails the whole build (design.md,
 * "Never publish a bad tree").
 * @module
 */
import { createHash } from 'node:crypto'
import type { Dialect, PageRecord, Snapshot } from './snapshot.js'

/** One page as the sync delivers it: fields for the index, and its already-rewritten texts. */
export interface SyncedPage {
  readonly id: number
  readonly type: string
  readonly title: string
  readonly slug: string
  readonly showInMenus: boolean
  readonly seoTitle: string
  readonly searchDescription: string
  readonly parentId: number | null
  /** The listing item's text, formatted for depth 2 of a list envelope. */
  readonly listItem: string
  /** The item as a listing filtered to this page's one type shows it, when that differs. */
  readonly typedListItem?: string
  /** A Buffer is a detail kept from the previous snapshot: reused as is, with its digest. */
  readonly detail: string | Buffer
  /** The page's {@link pageDigest}, when it is already known (a page carried over unchanged). */
  readonly digest?: string
}

/**
 * A digest of everything a client can see of one page: its listing items and its detail. Equal
 * digests mean the page's bytes did not change between two snapshots.
 */
export function pageDigest(listItem: string, typedListItem: string | undefined, detail: string | Buffer): string {
  return createHash('sha256').update(listItem).update('\u0000').update(typedListItem ?? '').update('\u0000').update(detail).digest('base64url').slice(0, 22)
}

/**
 * A snapshot's page as a sync delivers it again: the same texts, and the detail Buffer and digest
 * reused, so carrying an unchanged page into the next snapshot copies and hashes nothing.
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
  }
}

export class TreeInconsistentError extends Error {
  override readonly name = 'TreeInconsistentError'
  constructor(readonly problems: readonly string[]) {
    super(`page tree is inconsistent: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`)
  }
}

/** Every reason the pages do not form one tree; empty when they do. */
export function findTreeProblems(pages: readonly SyncedPage[]): string[] {
  const problems: string[] = []
  if (pages.length === 0) return ['the CMS lists no pages']
  const byId = new Map<number, SyncedPage>()
  for (const page of pages) {
    if (byId.has(page.id)) problems.push(`page ${page.id} is listed twice`)
    byId.set(page.id, page)
  }
  if (pages[0]!.parentId !== null) problems.push(`the first page in tree order (${pages[0]!.id}) is not the site root`)
  for (const page of pages) {
    if (page.parentId !== null && !byId.has(page.parentId)) {
      problems.push(`page ${page.id} names parent ${page.parentId}, which is not in the tree`)
    }
  }
  // Walk each chain once; a chain that comes back to a page on the current walk is a cycle.
  const state = new Map<number, 'walking' | 'done'>()
  for (const start of pages) {
    const walk: number[] = []
    let id: number | null = start.id
    while (id !== null && state.get(id) !== 'done') {
      if (state.get(id) === 'walking') {
        problems.push(`pages ${walk.slice(walk.indexOf(id)).join(' → ')} form a cycle`)
        break
      }
      state.set(id, 'walking')
      walk.push(id)
      id = byId.get(id)?.parentId ?? null
    }
    for (const seen of walk) state.set(seen, 'done')
  }
  return problems
}

/**
 * Subtree ends from a pre-order walk; `undefined` when the order is not a pre-order of the
 * parent links (a live page below an unpublished one has a `null` parent mid-tree).
 */
function subtreeEnds(pages: readonly SyncedPage[]): number[] | undefined {
  const ends = new Array<number>(pages.length).fill(0)
  const stack: number[] = []
  for (let i = 0; i < pages.length; i++) {
    const parentId = pages[i]!.parentId
    while (stack.length > 0 && pages[stack[stack.length - 1]!]!.id !== parentId) ends[stack.pop()!] = i
    if (stack.length === 0 && i > 0) return undefined
    stack.push(i)
  }
  while (stack.length > 0) ends[stack.pop()!] = pages.length
  return ends
}

/**
 * A copy that owns its characters. Strings read out of a large body are V8 slices that keep the
 * whole body alive; records live for a snapshot's lifetime, so they must not pin sync buffers.
 */
function detach(text: string): string {
  return text.length < 13 ? text : Buffer.from(text, 'utf8').toString('utf8')
}

export interface BuildOptions {
  readonly version: number
  readonly syncedAt: number
  /** When every detail was last fetched; defaults to `syncedAt` (a full sync). */
  readonly fullSyncedAt?: number
  readonly dialect: Dialect
}

export function buildSnapshot(pages: readonly SyncedPage[], options: BuildOptions): Snapshot {
  const problems = findTreeProblems(pages)
  if (problems.length > 0) throw new TreeInconsistentError(problems)

  const ends = subtreeEnds(pages)
  // The fingerprint hashes each page's digest, not its bytes: a page carried over unchanged costs
  // nothing to hash again (an incremental sync rebuilds only what changed).
  const hash = createHash('sha256')
  const records: PageRecord[] = pages.map((page, order) => {
    const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
    hash.update(`${page.id}:${page.parentId ?? ''}:${digest}\u0000`)
    return {
      id: page.id,
      type: detach(page.type),
      title: detach(page.title),
      slug: detach(page.slug),
      showInMenus: page.showInMenus,
      seoTitle: detach(page.seoTitle),
      searchDescription: detach(page.searchDescription),
      parentId: page.parentId,
      order,
      subtreeEnd: ends ? ends[order]! : order + 1,
      listItem: detach(page.listItem),
      typedListItem: page.typedListItem === undefined ? undefined : detach(page.typedListItem),
      detail: typeof page.detail === 'string' ? Buffer.from(page.detail, 'utf8') : page.detail,
      digest,
    }
  })

  const byId = new Map(records.map((record) => [record.id, record]))
  const childrenOf = new Map<number, PageRecord[]>()
  const types = new Map<string, string>()
  for (const record of records) {
    if (record.parentId !== null) {
      const siblings = childrenOf.get(record.parentId)
      if (siblings) siblings.push(record)
      else childrenOf.set(record.parentId, [record])
    }
    const [app = '', model = ''] = record.type.split('.')
    types.set(`${app}.${model.toLowerCase()}`, record.type)
  }

  const root = records[0]!
  const byPath = new Map<string, number>([['', root.id]])
  const pathOf = new Map<number, string>([[root.id, '']])
  // Parents come before children in tree order, so one pass resolves every reachable path.
  for (const record of records.slice(1)) {
    if (record.parentId === null) continue
    const parentPath = pathOf.get(record.parentId)
    if (parentPath === undefined) continue
    const path = parentPath === '' ? record.slug : `${parentPath}/${record.slug}`
    pathOf.set(record.id, path)
    if (!byPath.has(path)) byPath.set(path, record.id)
  }

  hash.update(JSON.stringify(options.dialect))
  return Object.freeze({
    version: options.version,
    syncedAt: options.syncedAt,
    fullSyncedAt: options.fullSyncedAt ?? options.syncedAt,
    fingerprint: hash.digest('base64url'),
    pages: Object.freeze(records),
    byId,
    childrenOf,
    rootId: root.id,
    byPath,
    types,
    treeExact: ends !== undefined,
    dialect: options.dialect,
  })
}
