/**
 * A snapshot stored as what changed since another: the pages replaced or added, the new tree order
 * when it is not the base's, and the rest of the new snapshot's metadata, keyed by the base's
 * fingerprint and the result's (docs/architecture.md#persistence). A one-page edit stored whole
 * costs what the whole tree does; as a patch it costs what the page does, and whoever holds the base rebuilds the new snapshot exactly as the syncing instance did,
 * checked by the fingerprint.
 *
 * ```
 * offset  size  field
 *      0     7  magic "CMSPTCH"
 *      7     1  format version (u8): PATCH_FORMAT_VERSION
 *      8     4  metadata length M (u32, big-endian)
 *     12     4  uncompressed length of the pages (u32, big-endian)
 *     16    32  SHA-256 of bytes 0..16 followed by every byte from offset 48 on
 *     48     M  metadata: one JSON object, uncompressed (a snapshot's metadata, plus `from`,
 *               `pages` (how many page lines) and `order` when the tree order changed)
 *   48+M     …  page lines, gzip: the snapshot format's lines (`snapshot-codec.ts`)
 * ```
 *
 * `order` lists the new tree order as segments: `[from, to]` is the base's pages at positions
 * `from ≤ p < to`, kept as they were; a number is the page of that id from the patch's lines. An
 * edit, a move or an insertion is a few segments however large the tree. Absent, the order and the
 * set of pages are the base's, and every line replaces the page of its id in place.
 * @module
 */
import { createHash } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'
import { buildSnapshot, carryOver, patchSnapshot, type SyncedPage } from '../tree/build-snapshot.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import { pageLine, readPage } from './page-lines.js'
import type { Refusal } from './refusal.js'
import { syncedPageOf } from './snapshot-codec.js'
import { isCount, metadataFields, metadataOf, readMetadata, type SnapshotMetadata, type SnapshotOrigin } from './snapshot-metadata.js'
import { rebasePages, sameBaseUrl } from './rebase-snapshot.js'

const PATCH_FORMAT_VERSION = 1
const MAGIC = Buffer.from('CMSPTCH', 'latin1')
const HASHED_HEADER_BYTES = 16
const HEADER_BYTES = HASHED_HEADER_BYTES + 32
const MAX_U32 = 0xffff_ffff

/** Positions `[from, to)` of the base's pages, or the id of a page from the patch's lines. */
export type OrderSegment = number | readonly [number, number]

export interface PatchMetadata extends SnapshotMetadata {
  /** The fingerprint of the snapshot this patch applies to. */
  readonly from: string
  /** Pages in the resulting snapshot. */
  readonly pageCount: number
  /** The new tree order; absent when it is the base's. */
  readonly order?: readonly OrderSegment[]
}

export interface SnapshotPatch extends PatchMetadata {
  /** Pages replaced or added, each with its new texts. */
  readonly pages: readonly SyncedPage[]
}

export type PatchResult = { readonly ok: true; readonly patch: SnapshotPatch } | Refusal
export type PatchHeaderResult = { readonly ok: true; readonly metadata: PatchMetadata & { readonly lines: number } } | Refusal
export type AppliedResult = { readonly ok: true; readonly snapshot: Snapshot } | Refusal

function refuse(reason: string): Refusal {
  return { ok: false, reason }
}

// ---------------------------------------------------------------------------------------------
// What changed

/** Everything a page's record holds besides its place: equal means the base's record can stay. */
function sameContent(before: PageRecord, after: PageRecord): boolean {
  return before === after || (
    before.digest === after.digest && before.parentId === after.parentId && before.type === after.type && before.title === after.title &&
    before.slug === after.slug && before.showInMenus === after.showInMenus && before.seoTitle === after.seoTitle &&
    before.searchDescription === after.searchDescription && before.listItem === after.listItem && before.typedListItem === after.typedListItem
  )
}

/**
 * What turns `base` into `next`, or `undefined` when more than `maxPages` pages changed (storing
 * the whole snapshot is then no dearer). A snapshot patched in place from `base`
 * (`Snapshot.patched`) names its changes, and costs what they are; any other pair is compared
 * page by page in tree order.
 */
export function diffSnapshots(base: Snapshot, next: Snapshot, maxPages: number): { order?: OrderSegment[]; pages: SyncedPage[] } | undefined {
  if (next.patched?.from === base.fingerprint) {
    if (next.patched.ids.length > maxPages) return undefined
    return { pages: next.patched.ids.map((id) => syncedPageOf(next.byId.get(id)!)) }
  }
  const order: OrderSegment[] = []
  const pages: SyncedPage[] = []
  let sameOrder = next.pages.length === base.pages.length
  let runFrom = -1
  let runTo = -1
  const endRun = () => {
    if (runFrom >= 0) order.push([runFrom, runTo])
    runFrom = -1
  }
  for (const record of next.pages) {
    if (sameOrder && base.pages.at(record.order)!.id !== record.id) sameOrder = false
    const before = base.byId.get(record.id)
    if (before !== undefined && sameContent(before, record)) {
      if (runFrom >= 0 && runTo === before.order) runTo++
      else {
        endRun()
        runFrom = before.order
        runTo = before.order + 1
      }
      continue
    }
    endRun()
    order.push(record.id)
    if (pages.length === maxPages) return undefined
    pages.push(syncedPageOf(record))
  }
  endRun()
  return sameOrder ? { pages } : { order, pages }
}

/** The patch from `base` to `next`, stamped with the configuration it was synced under; `undefined` as {@link diffSnapshots}. */
export function patchBetween(base: Snapshot, next: Snapshot, origin: SnapshotOrigin, maxPages: number): SnapshotPatch | undefined {
  const diff = diffSnapshots(base, next, maxPages)
  if (!diff) return undefined
  return { ...metadataOf(next, origin), from: base.fingerprint, pageCount: next.pages.length, ...diff }
}

// ---------------------------------------------------------------------------------------------
// Stored form

export function encodePatch(patch: SnapshotPatch): Buffer {
  const lines: Buffer[] = []
  for (const page of patch.pages) lines.push(pageLine(page), Buffer.from('\n'))
  const raw = Buffer.concat(lines)
  const metadata = Buffer.from(JSON.stringify({
    ...metadataFields(patch), from: patch.from, pageCount: patch.pageCount, lines: patch.pages.length, ...(patch.order ? { order: patch.order } : {}),
  }), 'utf8')
  if (raw.length > MAX_U32 || metadata.length > MAX_U32) throw new RangeError(`a patch of ${raw.length} bytes is too large to store`)
  // Patches are small (what an edit changed): compressed in one call, at gzip's fast level.
  const pages = gzipSync(raw, { level: 4 })
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeUInt8(PATCH_FORMAT_VERSION, 7)
  header.writeUInt32BE(metadata.length, 8)
  header.writeUInt32BE(raw.length, 12)
  createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata).update(pages).digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, pages])
}

function readOrder(value: unknown): OrderSegment[] | undefined {
  if (!Array.isArray(value)) return undefined
  const order: OrderSegment[] = []
  for (const segment of value as unknown[]) {
    if (Number.isSafeInteger(segment)) order.push(segment as number)
    else if (Array.isArray(segment) && segment.length === 2 && isCount(segment[0]) && isCount(segment[1]) && segment[0] < segment[1]) {
      order.push([segment[0], segment[1]])
    } else return undefined
  }
  return order
}

interface PatchFrame {
  readonly metadata: PatchMetadata & { readonly lines: number }
  readonly rawLength: number
  readonly pages: Buffer
}

function readPatchFrame(buf: Buffer): { ok: true; frame: PatchFrame } | Refusal {
  if (!Buffer.isBuffer(buf) || buf.length < HEADER_BYTES || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return refuse('not a cms-shield patch')
  const formatVersion = buf.readUInt8(7)
  if (formatVersion !== PATCH_FORMAT_VERSION) return refuse(`patch format version ${formatVersion}; this build reads version ${PATCH_FORMAT_VERSION}`)
  const digest = createHash('sha256').update(buf.subarray(0, HASHED_HEADER_BYTES)).update(buf.subarray(HEADER_BYTES)).digest()
  if (!digest.equals(buf.subarray(HASHED_HEADER_BYTES, HEADER_BYTES))) return refuse('patch checksum mismatch (corrupted or truncated)')
  const metadataLength = buf.readUInt32BE(8)
  if (HEADER_BYTES + metadataLength > buf.length) return refuse('patch metadata runs past its end')
  let parsed: unknown
  try {
    parsed = JSON.parse(buf.toString('utf8', HEADER_BYTES, HEADER_BYTES + metadataLength))
  } catch {
    return refuse('patch metadata is not JSON')
  }
  const metadata = readMetadata(parsed, formatVersion)
  if (typeof metadata === 'string') return refuse(metadata.replace('snapshot', 'patch'))
  const { from, lines, order } = parsed as Record<string, unknown>
  if (typeof from !== 'string' || from === '') return refuse('patch metadata has no base fingerprint')
  if (!isCount(lines)) return refuse('patch metadata has no valid line count')
  const readOrderResult = order === undefined ? undefined : readOrder(order)
  if (order !== undefined && readOrderResult === undefined) return refuse('patch metadata has no valid order')
  const { formatVersion: _version, ...rest } = metadata
  return {
    ok: true,
    frame: {
      metadata: { ...rest, from, lines, ...(readOrderResult ? { order: readOrderResult } : {}) },
      rawLength: buf.readUInt32BE(12),
      pages: buf.subarray(HEADER_BYTES + metadataLength),
    },
  }
}

/** The metadata of an intact patch, without decompressing its pages. Never throws. */
export function readPatchMetadata(buf: Buffer): PatchHeaderResult {
  try {
    const read = readPatchFrame(buf)
    return read.ok ? { ok: true, metadata: read.frame.metadata } : read
  } catch (caught) {
    return refuse(`malformed patch: ${caught instanceof Error ? caught.message : String(caught)}`)
  }
}

/** The decoded patch, or why it was refused. Never throws. */
export function decodePatch(buf: Buffer): PatchResult {
  try {
    const read = readPatchFrame(buf)
    if (!read.ok) return read
    const { metadata, rawLength } = read.frame
    const raw = gunzipSync(read.frame.pages, { maxOutputLength: Math.max(rawLength, 1) })
    if (raw.length !== rawLength) return refuse(`patch pages are ${raw.length} bytes, the header says ${rawLength}`)
    const pages: SyncedPage[] = []
    let start = 0
    for (let index = 0; index < metadata.lines; index++) {
      const end = raw.indexOf(0x0a, start)
      if (end < 0) return refuse(`patch holds ${index} of its ${metadata.lines} pages`)
      const page = readPage(JSON.parse(raw.toString('utf8', start, end)) as unknown)
      if (!page) return refuse(`patch page #${index} is malformed`)
      pages.push(page)
      start = end + 1
    }
    if (start !== raw.length) return refuse('patch has data after its last page')
    const { lines: _lines, ...rest } = metadata
    return { ok: true, patch: { ...rest, pages } }
  } catch (caught) {
    return refuse(`malformed patch: ${caught instanceof Error ? caught.message : String(caught)}`)
  }
}

/** The patch with its pages' `detail_url`s on `baseUrl`, each keeping the digest of the bytes the syncing instance stored (`rebase-snapshot.ts`). */
export function rebasePatch(patch: SnapshotPatch, baseUrl: string): SnapshotPatch {
  if (sameBaseUrl(patch.baseUrl, baseUrl)) return patch
  return { ...patch, baseUrl, pages: rebasePages([...patch.pages], patch.baseUrl, baseUrl) }
}

// ---------------------------------------------------------------------------------------------
// Applying

/**
 * The new tree's pages in order: the base's kept (`keep` turns one into a page to build from) and
 * the patch's own, or why they do not fit the base.
 */
export function patchedPages<T extends { readonly id: number }>(
  base: readonly T[], patch: SnapshotPatch, keep: (page: T) => SyncedPage, positionOf: (id: number) => number | undefined,
): SyncedPage[] | string {
  const own = new Map(patch.pages.map((page) => [page.id, page]))
  if (patch.order === undefined) {
    if (patch.pageCount !== base.length) return `the patch keeps ${patch.pageCount} pages, the base has ${base.length}`
    const pages = base.map(keep)
    for (const page of patch.pages) {
      const position = positionOf(page.id)
      if (position === undefined) return `the patch replaces page ${page.id}, which the base does not hold`
      pages[position] = page
    }
    return pages
  }
  const pages: SyncedPage[] = []
  for (const segment of patch.order) {
    if (typeof segment === 'number') {
      const page = own.get(segment)
      if (!page) return `the patch orders page ${segment} but does not hold it`
      pages.push(page)
      continue
    }
    const [from, to] = segment
    if (to > base.length) return `the patch keeps positions up to ${to}, the base has ${base.length} pages`
    for (let position = from; position < to; position++) pages.push(keep(base[position]!))
  }
  if (pages.length !== patch.pageCount) return `the patch makes ${pages.length} pages, its metadata says ${patch.pageCount}`
  return pages
}

/** A patch that replaces pages where they stand (no move, rename, retype, addition or removal): `patchSnapshot` can apply it. */
function inPlace(base: Snapshot, patch: SnapshotPatch): boolean {
  if (patch.order !== undefined || patch.pageCount !== base.pages.length) return false
  return patch.pages.every((page) => {
    const before = base.byId.get(page.id)
    return before !== undefined && before.parentId === page.parentId && before.slug === page.slug && before.type === page.type
  })
}

/**
 * The snapshot `patch` makes of `base`, built as the syncing instance built it: replaced in place
 * when the tree keeps its shape (`patchSnapshot`, costs what changed), otherwise built again from
 * the base's pages carried over. Refused unless the base is the patch's and the result's
 * fingerprint is the patch's. Never throws.
 */
export function applyPatch(base: Snapshot, patch: SnapshotPatch): AppliedResult {
  if (base.fingerprint !== patch.from) return refuse(`the patch applies to ${patch.from}, not ${base.fingerprint}`)
  const options = {
    version: patch.version, syncedAt: patch.syncedAt, fullSyncedAt: patch.fullSyncedAt ?? 0, dialect: patch.dialect,
    ...(patch.translations === undefined ? {} : { translations: patch.translations }),
  }
  let snapshot: Snapshot
  try {
    if (inPlace(base, patch)) snapshot = patchSnapshot(base, new Map(patch.pages.map((page) => [page.id, page])), options)
    else {
      const pages = patchedPages(base.pages.slice(), patch, carryOver, (id) => base.byId.get(id)?.order)
      if (typeof pages === 'string') return refuse(pages)
      snapshot = buildSnapshot(pages, options)
    }
  } catch (caught) {
    return refuse(`the patch could not be applied: ${caught instanceof Error ? caught.message : String(caught)}`)
  }
  if (snapshot.fingerprint !== patch.fingerprint) return refuse(`the patched fingerprint ${snapshot.fingerprint} is not the patch's ${patch.fingerprint}`)
  return { ok: true, snapshot }
}
