/**
 * Reading the pages of the format this build writes (4), and the parts machinery format 3 shares.
 *
 * Format 4: the metadata also holds `parts`, each part's stored and uncompressed length, and
 * `groups`, each group's page count and fields length; the pages are those parts, each compressed
 * on its own, two per group of pages in tree order (`snapshot-groups.ts`):
 *
 * - the group's head: its fields, one JSON array with a row per page, `[id, type, title, slug,
 *   showInMenus, seoTitle, searchDescription, parentId, digest, listItem bytes, typedListItem
 *   bytes (-1: none), detail bytes]` (as many bytes as the group table says), then its pages'
 *   texts: each page's `listItem` and then its `typedListItem`, as UTF-8;
 * - the group's details: its pages' detail bodies, at most one slab (`json/byte-slabs.ts`) unless
 *   one page alone is larger.
 *
 * A group's cuts depend only on its pages, and its parts only on its rows (a page's digest
 * covers its texts and detail), so a whole save after a small change compresses the groups that
 * change again and copies the stored bytes of every other (`snapshot-encoder.ts`, the writer); a
 * store that keeps the buffer by chunk then receives only the chunks that changed (`chunk-manifest.ts`).
 *
 * Loading then parses small JSON texts, not every body: each group's details part stays
 * compressed until one of its pages is read (`details-part.ts`), each detail is then a view of the
 * part (the part is its slab), and each page keeps its stored digest, so nothing is copied, hashed
 * or decompressed per page. The checksum over the whole buffer vouches for the bytes, and the
 * fingerprint, rebuilt from the digests, for their places.
 * @module
 */
import { constants as bufferConstants } from 'node:buffer'
import type { SyncedPage } from '../tree/build-snapshot.js'
import { StoredPage, type StoredTexts } from '../tree/stored-page.js'
import { deferredPart, presentPart, type DetailsPart } from './details-part.js'
import { refuse, type Refusal } from './refusal.js'
import { BROTLI, GZIP, inflate, inflateAsync, NONE, ownCopy } from './snapshot-compression.js'
import type { Frame, PartTable } from './snapshot-framing.js'
import { isCount, type SnapshotMetadata } from './snapshot-metadata.js'

export interface DecodedSnapshot extends SnapshotMetadata {
  readonly pages: SyncedPage[]
  readonly formatVersion: number
}

export type DecodeResult = { readonly ok: true; readonly decoded: DecodedSnapshot } | Refusal

/** The parts as a layout's `pagesOf` takes them: the others uncompressed, the details parts kept as {@link detailsPart}. */
export interface SplitParts {
  readonly heads: Buffer[]
  readonly details: DetailsPart[]
}

/** How a format lays its pages out in parts: which parts hold details, and how the parts become pages. */
export interface PartsLayout {
  isDetails(index: number): boolean
  pagesOf(split: SplitParts, frame: Frame): DecodeResult
}

/** Format 4: a head and a details part per group. */
export const GROUPED_LAYOUT: PartsLayout = {
  isDetails: (index) => index % 2 === 1,
  pagesOf: pagesOfGroups,
}

/**
 * The parts that are not details decompressed one after another, the details parts deferred,
 * then their pages (the layout's `pagesOf`).
 */
export function decodeParts(frame: Frame, parts: PartTable, layout: PartsLayout): DecodeResult {
  const split: SplitParts = { heads: [], details: [] }
  for (const { index, stored, rawLength, details } of partsOf(frame.pages, parts, layout)) {
    const part = details ? detailsPart(frame.compression, stored, rawLength, index) : inflate(frame.compression, stored, rawLength)
    if ('ok' in part) return part
    if (Buffer.isBuffer(part)) split.heads.push(part)
    else split.details.push(part)
  }
  return layout.pagesOf(split, frame)
}

/** Parts decompressed at once on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise). */
const PARALLEL_INFLATES = 4

/**
 * {@link decodeParts} with the parts that are not details decompressed on libuv's thread pool,
 * several at once, so that a follower loading a whole snapshot keeps answering meanwhile.
 */
export async function decodePartsAsync(frame: Frame, parts: PartTable, layout: PartsLayout): Promise<DecodeResult> {
  const { compression } = frame
  const split: SplitParts = { heads: [], details: [] }
  const inflating: { index: number; stored: Buffer; rawLength: number }[] = []
  for (const { index, stored, rawLength, details } of partsOf(frame.pages, parts, layout)) {
    if (!details) {
      inflating.push({ index: split.heads.length, stored, rawLength })
      split.heads.push(EMPTY)
      continue
    }
    const part = detailsPart(compression, stored, rawLength, index)
    if ('ok' in part) return part
    split.details.push(part)
  }
  let next = 0
  let refusal: Refusal | undefined
  const worker = async () => {
    while (refusal === undefined && next < inflating.length) {
      const { index, stored, rawLength } = inflating[next++]!
      const raw = await inflateAsync(compression, stored, rawLength)
      if (Buffer.isBuffer(raw)) split.heads[index] = raw
      else refusal = raw
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL_INFLATES, inflating.length) }, worker))
  return refusal ?? layout.pagesOf(split, frame)
}

const EMPTY = Buffer.alloc(0)

/** Each part's stored bytes and uncompressed length, and whether it holds details. */
function* partsOf(pages: Buffer, parts: PartTable, layout: PartsLayout): Generator<{ index: number; stored: Buffer; rawLength: number; details: boolean }> {
  let at = 0
  for (const [index, [storedLength, rawLength]] of parts.entries()) {
    yield { index, stored: pages.subarray(at, at + storedLength), rawLength, details: layout.isDetails(index) }
    at += storedLength
  }
}

/**
 * A details part as loading keeps it: at hand when stored uncompressed (copied, so that the pages
 * do not keep the stored buffer alive), otherwise compressed, in a copy of its own, until the
 * first of its pages is read (docs/performance.md, "Details decompressed on first read"). The
 * checksum over the whole buffer has vouched for its bytes already.
 */
function detailsPart(compression: number, stored: Buffer, rawLength: number, index: number): DetailsPart | Refusal {
  if (compression === NONE) {
    return stored.length === rawLength ? presentPart(ownCopy(stored)) : refuse(`snapshot pages are ${stored.length} bytes, the header says ${rawLength}`)
  }
  if (compression !== GZIP && compression !== BROTLI) return refuse(`unknown snapshot compression ${compression}`)
  if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
  const compressed = ownCopy(stored)
  return deferredPart(rawLength, () => inflate(compression, compressed, rawLength), `details part #${index}`)
}

/**
 * Format 4's pages: for each group, its fields and texts in one head part and its details in one
 * part. Each page keeps the digest it was stored with and its detail as a body of its part, so
 * loading copies, hashes and (compressed) decompresses no page's detail: the checksum over the
 * whole buffer already vouches for the bytes, and the rebuilt fingerprint for the digests' places.
 */
function pagesOfGroups({ heads, details }: SplitParts, frame: Frame): DecodeResult {
  const { pageCount, ...rest } = frame.metadata
  const pages = new Array<SyncedPage>(pageCount)
  let first = 0
  for (const [index, [count, fieldsBytes]] of (frame.groups ?? []).entries()) {
    const head = heads[index]!
    const rows = JSON.parse(head.toString('utf8', 0, fieldsBytes)) as unknown
    if (!Array.isArray(rows) || rows.length !== count) return refuse(`snapshot group #${index} holds ${Array.isArray(rows) ? rows.length : 0} of its ${count} pages`)
    const why = readRows(rows, head.subarray(fieldsBytes), [details[index]!], pages, first)
    if (why !== undefined) return refuse(why)
    first += count
  }
  return { ok: true, decoded: { ...rest, pages } }
}

const FIELDS_ROW_LENGTH = 12

/**
 * Decodes `rows` with their `texts` and `details` into `pages` from `pages[first]` on, or says
 * why they do not fit together. Every text and every detail byte must belong to a page.
 */
export function readRows(rows: readonly unknown[], texts: Buffer, details: readonly DetailsPart[], pages: SyncedPage[], first: number): string | undefined {
  let textAt = 0
  let part = 0
  let detailAt = 0
  for (let row = 0; row < rows.length; row++) {
    const index = first + row
    const fields = rows[row] as unknown
    if (!Array.isArray(fields) || fields.length !== FIELDS_ROW_LENGTH) return `snapshot page #${index} is malformed`
    const [id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, digest, listLength, typedLength, detailLength] = fields as unknown[]
    if (typeof digest !== 'string' || digest === '' || !isCount(listLength) || !isCount(detailLength)) return `snapshot page #${index} is malformed`
    if (typedLength !== -1 && !isCount(typedLength)) return `snapshot page #${index} is malformed`
    // The checks of `readPage`, made here so that each page is built once, as one object.
    if (!Number.isSafeInteger(id) || (parentId !== null && !Number.isSafeInteger(parentId)) || typeof showInMenus !== 'boolean') return `snapshot page #${index} is malformed`
    if (typeof type !== 'string' || typeof title !== 'string' || typeof slug !== 'string' || typeof seoTitle !== 'string' || typeof searchDescription !== 'string') {
      return `snapshot page #${index} is malformed`
    }
    const textEnd = textAt + listLength + (typedLength === -1 ? 0 : typedLength)
    if (textEnd > texts.length) return `snapshot page #${index} runs past its texts`
    // The items stay bytes until read (`stored-page.ts`).
    const stored: StoredTexts = { bytes: texts, start: textAt, listEnd: textAt + listLength, typedEnd: typedLength === -1 ? -1 : textEnd }
    textAt = textEnd
    // A page's detail is never split: an exhausted part hands over to the next.
    if (part < details.length && detailAt === details[part]!.length && detailLength > 0) {
      part++
      detailAt = 0
    }
    const holder = details[part]
    if (detailLength > 0 && (holder === undefined || detailAt + detailLength > holder.length)) return `snapshot page #${index} runs past its details`
    // An empty detail of its own: what is remembered by body (answers, ETags) must not be shared by two pages.
    const detail = holder === undefined || detailLength === 0 ? Buffer.alloc(0) : holder.body(detailAt, detailLength)
    detailAt += detailLength
    pages[index] = new StoredPage(id as number, type, title, slug, showInMenus, seoTitle, searchDescription, parentId as number | null, detail, digest, stored)
  }
  if (textAt !== texts.length || part !== Math.max(details.length - 1, 0) || (details.length > 0 && detailAt !== details[part]!.length)) {
    return 'snapshot has data after its last page'
  }
  return undefined
}
