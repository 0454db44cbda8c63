/**
 * The stored form of a snapshot (a file, a Redis key): versioned, checksummed, compressed.
 *
 * ```
 * offset  size  field
 *      0     7  magic "CMSSHLD"
 *      7     1  format version (u8): SNAPSHOT_FORMAT_VERSION
 *      8     1  compression of the pages (u8): 0 = none, 1 = gzip, 2 = brotli
 *      9     4  metadata length M (u32, big-endian)
 *     13     4  uncompressed length of the pages (u32, big-endian)
 *     17    32  SHA-256 of bytes 0..17 followed by every byte from offset 49 on
 *     49     M  metadata: one JSON object, uncompressed
 *   49+M     …  pages, compressed
 * ```
 *
 * The metadata (UPSTREAM_URL, BASE_URL, syncedAt, version, fingerprint, dialect, page count) is
 * stored uncompressed so that choosing among several stored snapshots costs a checksum, not a
 * decompression and a parse of each. Compression 0 stores the pages as they are.
 *
 * Format 4 (written): the metadata also holds `parts`, each part's stored and uncompressed
 * length, and `groups`, each group's page count and fields length; the pages are those parts,
 * each compressed on its own, two per group of pages in tree order (`snapshot-groups.ts`):
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
 * change again and copies the stored bytes of every other (`snapshot-encoder.ts`); a store that
 * keeps the buffer by chunk then receives only the chunks that changed (`chunk-manifest.ts`).
 *
 * Loading then parses small JSON texts, not every body: each group's details part stays
 * compressed until one of its pages is read (`details-part.ts`), each detail is then a view of the
 * part (the part is its slab), and each page keeps its stored digest, so nothing is copied, hashed
 * or decompressed per page. The checksum over the whole buffer vouches for the bytes, and the
 * fingerprint, rebuilt from the digests, for their places.
 *
 * Format 3 (still read): the same rows and texts, but for the whole snapshot at once: one part of
 * every page's fields row, one of every page's texts, then the details in parts of about one
 * slab that end on a page boundary, with no group table.
 *
 * Format 2 (still read): the pages are newline-delimited JSON, one line per page in tree order: a
 * positional array `[id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId,
 * listItem, detail]`, with `typedListItem` appended when the page has one (patches keep these
 * lines, `snapshot-patch.ts`). Loading one hashes and copies every page again.
 *
 * Decoding never throws: anything malformed, truncated, of another format version or failing its
 * checksum is refused with a reason. A snapshot does not know where its bodies came from, so the
 * metadata carries the UPSTREAM_URL it was synced from and the BASE_URL its `detail_url`s were
 * rewritten to; {@link loadSnapshot} refuses one synced from another CMS, and points one made for
 * another BASE_URL at this instance's.
 * @module
 */
import { createHash } from 'node:crypto'
import { constants as bufferConstants } from 'node:buffer'
import { promisify } from 'node:util'
import {
  brotliCompress, brotliDecompress, brotliDecompressSync, constants as zlib, gunzip, gunzipSync, gzip, type BrotliOptions, type ZlibOptions,
} from 'node:zlib'
import { bytesOf } from '../tree/detail-body.js'
import { buildSnapshot, carryOver, TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import { StoredPage, type StoredTexts } from '../tree/stored-page.js'
import type { Dialect, PageRecord, Snapshot } from '../tree/snapshot.js'
import { deferredPart, presentPart, type DetailsPart } from './details-part.js'
import { rebasePages, sameBaseUrl } from './rebase-snapshot.js'
import { NOT_ACCEPTABLE_TEXT } from '../query/wagtail-messages.js'

/**
 * The format this build writes. 4: the pages in groups of parts, each compressed on its own, so
 * that a whole save reuses what did not change (docs/performance.md, "Whole saves that reuse").
 * 3 and 2 are still read; a version-1 snapshot could not be rebuilt to its own fingerprint (it
 * hashed pages, not per-block digests).
 */
const SNAPSHOT_FORMAT_VERSION = 4
/** The pages in parts, not grouped (docs/performance.md, "Warm start from Redis"): still read. */
const PARTS_FORMAT_VERSION = 3
/** Pages as JSON lines, each page's digest and detail computed again on load: still read. */
const LINES_FORMAT_VERSION = 2

const MAGIC = Buffer.from('CMSSHLD', 'latin1')
const HASHED_HEADER_BYTES = 17
const HEADER_BYTES = HASHED_HEADER_BYTES + 32
/** Bytes before the metadata: an encoder's first chunk holds them (`snapshot-encoder.ts`). */
export const FRAME_HEADER_BYTES = HEADER_BYTES
const NONE = 0
const GZIP = 1
const BROTLI = 2
const MAX_U32 = 0xffff_ffff

export type SnapshotCompression = 'none' | 'gzip' | 'brotli'

export interface SnapshotMetadata {
  readonly dialect: Dialect
  /** The UPSTREAM_URL the pages were synced from. */
  readonly upstreamUrl: string
  /** The BASE_URL the stored bodies' `detail_url`s point at. */
  readonly baseUrl: string
  readonly syncedAt: number
  /** Absent in snapshots stored before incremental syncs: read as 0 (a full sync is due). */
  readonly fullSyncedAt?: number
  readonly version: number
  readonly fingerprint: string
}

export interface EncodeOptions {
  /**
   * Default `brotli` at quality 4: on a synthetic 10,000-page tree, 10–15% smaller than gzip at
   * level 6 for about the same encoding time on prose-like text (slower on near-random text).
   * `none` stores the parts as they are: at 100,000 pages about 290 MB against 22 MB, and reading
   * that from Redis over loopback took longer than decompressing (docs/performance.md).
   */
  readonly compression?: SnapshotCompression
}

export interface StoredMetadata extends SnapshotMetadata {
  readonly formatVersion: number
  readonly pageCount: number
}

export interface DecodedSnapshot extends SnapshotMetadata {
  readonly pages: SyncedPage[]
  readonly formatVersion: number
}

export type Refusal = { readonly ok: false; readonly reason: string }
/**
 * What {@link readSnapshotMetadata} read of a buffer whose checksum held: decoding it again
 * ({@link tryDecodeSnapshot}) starts from here and does not hash the whole buffer a second time.
 */
export interface CheckedSnapshot {
  readonly checked: Frame
}
export type MetadataResult = { readonly ok: true; readonly metadata: StoredMetadata; readonly snapshot: CheckedSnapshot } | Refusal
export type DecodeResult = { readonly ok: true; readonly decoded: DecodedSnapshot } | Refusal
export type LoadResult = { readonly ok: true; readonly snapshot: Snapshot; readonly decoded: DecodedSnapshot } | Refusal

/** The configuration a stored snapshot must have been made for. */
export interface SnapshotOrigin {
  readonly upstreamUrl: string
  readonly baseUrl: string
}

// ---------------------------------------------------------------------------------------------
// Encoding

const BROTLI_QUALITY = 4
const GZIP_LEVEL = 6

/** The metadata's fields as stored (a patch's metadata starts with the same). */
export function metadataFields(input: SnapshotMetadata): Record<string, unknown> {
  const { dialect } = input
  return {
    upstreamUrl: input.upstreamUrl,
    baseUrl: input.baseUrl,
    syncedAt: input.syncedAt,
    fullSyncedAt: input.fullSyncedAt ?? input.syncedAt,
    version: input.version,
    fingerprint: input.fingerprint,
    dialect: {
      limitMax: dialect.limitMax, emptyTypeIgnored: dialect.emptyTypeIgnored, findKeepsQuery: dialect.findKeepsQuery, nulInTextFilter: dialect.nulInTextFilter,
      notAcceptableText: dialect.notAcceptableText,
    },
  }
}

/** One page's line: the positional JSON array described above (also a patch's page lines). */
export function pageLine(page: SyncedPage): Buffer {
  const line: unknown[] = [
    page.id, page.type, page.title, page.slug, page.showInMenus, page.seoTitle, page.searchDescription, page.parentId,
    page.listItem, page.detail,
  ]
  if (page.typedListItem !== undefined) line.push(page.typedListItem)
  return Buffer.from(JSON.stringify(line), 'utf8')
}

const brotliOptions: BrotliOptions = {
  params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT },
}

const gzipOptions: ZlibOptions = { level: GZIP_LEVEL }

/**
 * The stored snapshot: header, metadata, then the stored `parts` one after another. The checksum
 * is taken part by part and the buffer assembled in one copy.
 */
export function frame(compression: SnapshotCompression, metadata: Buffer, rawLength: number, parts: readonly Buffer[]): Buffer {
  if (rawLength > MAX_U32 || metadata.length > MAX_U32) throw new RangeError(`a snapshot of ${rawLength} bytes is too large to store`)
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeUInt8(SNAPSHOT_FORMAT_VERSION, 7)
  header.writeUInt8(compression === 'gzip' ? GZIP : compression === 'none' ? NONE : BROTLI, 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(rawLength, 13)
  const hash = createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata)
  for (const part of parts) hash.update(part)
  hash.digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, ...parts])
}

const brotliCompressAsync = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

/** One part as stored, compressed on libuv's thread pool (`none`: the part itself). */
export function compressPart(compression: SnapshotCompression, raw: Buffer): Promise<Buffer> {
  if (compression === 'none') return Promise.resolve(raw)
  return compression === 'gzip' ? gzipAsync(raw, gzipOptions) : brotliCompressAsync(raw, brotliOptions)
}

// ---------------------------------------------------------------------------------------------
// Decoding

function refuse(reason: string): Refusal {
  return { ok: false, reason }
}

function describe(caught: unknown): string {
  return caught instanceof Error ? caught.message : String(caught)
}

interface Frame {
  readonly metadata: StoredMetadata
  readonly compression: number
  readonly rawLength: number
  readonly pages: Buffer
  /** Formats 3 and 4: each part's stored and uncompressed length, in order. */
  readonly parts?: readonly (readonly [stored: number, raw: number])[]
  /** Format 4: each group's page count and the length of its fields (its head part begins with them). */
  readonly groups?: readonly (readonly [pages: number, fieldsBytes: number])[]
}

/** The part table of a format-3 or format-4 snapshot, or why it is not valid. */
function readParts(value: unknown, storedLength: number, rawLength: number, fewest: number): [number, number][] | string {
  if (!Array.isArray(value) || value.length < fewest) return 'snapshot metadata has no valid part table'
  let stored = 0
  let raw = 0
  const parts: [number, number][] = []
  for (const part of value as unknown[]) {
    if (!Array.isArray(part) || part.length !== 2 || !isCount(part[0]) || !isCount(part[1])) return 'snapshot metadata has no valid part table'
    stored += part[0]
    raw += part[1]
    parts.push([part[0], part[1]])
  }
  if (stored !== storedLength || raw !== rawLength) return 'snapshot parts do not add up to its length'
  return parts
}

/** The group table of a format-4 snapshot, checked against its parts and page count, or why it is not valid. */
function readGroups(value: unknown, parts: readonly (readonly [number, number])[], pageCount: number): [number, number][] | string {
  if (!Array.isArray(value) || parts.length !== 2 * value.length) return 'snapshot metadata has no valid group table'
  let pages = 0
  const groups: [number, number][] = []
  for (const [index, group] of (value as unknown[]).entries()) {
    if (!Array.isArray(group) || group.length !== 2 || !isCount(group[0]) || !isCount(group[1])) return 'snapshot metadata has no valid group table'
    if (group[1] > parts[2 * index]![1]) return `snapshot group #${index} is malformed`
    pages += group[0]
    groups.push([group[0], group[1]])
  }
  if (pages !== pageCount) return `snapshot groups hold ${pages} of its ${pageCount} pages`
  return groups
}

const READ_VERSIONS = [LINES_FORMAT_VERSION, PARTS_FORMAT_VERSION, SNAPSHOT_FORMAT_VERSION]

/** Checks magic, format version and checksum, and reads the metadata. */
function readFrame(buf: Buffer): { ok: true; frame: Frame } | Refusal {
  if (!Buffer.isBuffer(buf)) return refuse('not a buffer')
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return refuse('not a cms-shield snapshot (no CMSSHLD magic)')
  if (buf.length < HEADER_BYTES) return refuse(`truncated snapshot (${buf.length} bytes, shorter than its header)`)
  const formatVersion = buf.readUInt8(7)
  if (!READ_VERSIONS.includes(formatVersion)) {
    return refuse(`snapshot format version ${formatVersion}; this build reads versions ${READ_VERSIONS.slice(0, -1).join(', ')} and ${READ_VERSIONS.at(-1)}`)
  }
  const digest = createHash('sha256').update(buf.subarray(0, HASHED_HEADER_BYTES)).update(buf.subarray(HEADER_BYTES)).digest()
  if (!digest.equals(buf.subarray(HASHED_HEADER_BYTES, HEADER_BYTES))) return refuse('snapshot checksum mismatch (corrupted or truncated)')
  const compression = buf.readUInt8(8)
  const metadataLength = buf.readUInt32BE(9)
  const rawLength = buf.readUInt32BE(13)
  if (HEADER_BYTES + metadataLength > buf.length) return refuse('snapshot metadata runs past its end')
  let parsed: unknown
  try {
    parsed = JSON.parse(buf.toString('utf8', HEADER_BYTES, HEADER_BYTES + metadataLength))
  } catch (caught) {
    return refuse(`snapshot metadata is not JSON: ${describe(caught)}`)
  }
  const metadata = readMetadata(parsed, formatVersion)
  if (typeof metadata === 'string') return refuse(metadata)
  const pages = buf.subarray(HEADER_BYTES + metadataLength)
  if (formatVersion === LINES_FORMAT_VERSION) return { ok: true, frame: { metadata, compression, rawLength, pages } }
  const fields = parsed as Record<string, unknown>
  // Format 3 has a fields and a texts part whatever it holds; format 4 none for no pages.
  const parts = readParts(fields['parts'], pages.length, rawLength, formatVersion === PARTS_FORMAT_VERSION ? 2 : 0)
  if (typeof parts === 'string') return refuse(parts)
  if (formatVersion === PARTS_FORMAT_VERSION) return { ok: true, frame: { metadata, compression, rawLength, pages, parts } }
  const groups = readGroups(fields['groups'], parts, metadata.pageCount)
  if (typeof groups === 'string') return refuse(groups)
  return { ok: true, frame: { metadata, compression, rawLength, pages, parts, groups } }
}

/**
 * The metadata of an intact snapshot without decompressing its pages (a checksum over the whole
 * buffer is still computed). Never throws.
 */
export function readSnapshotMetadata(buf: Buffer): MetadataResult {
  try {
    const result = readFrame(buf)
    return result.ok ? { ok: true, metadata: result.frame.metadata, snapshot: { checked: result.frame } } : result
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

/**
 * maxOutputLength bounds the work a mislabelled body can cause. The output buffer is one byte
 * longer than the part: the part comes out in one piece (no 16 KB chunks to gather and copy), and
 * zlib, never finding it full, allocates no other.
 */
function inflateLimits(rawLength: number): ZlibOptions {
  return { maxOutputLength: Math.max(rawLength, 1), chunkSize: Math.max(rawLength + 1, zlib.Z_MIN_CHUNK) }
}

/** One part's bytes as stored, uncompressed: `rawLength` of them, or a refusal. */
function inflate(compression: number, stored: Buffer, rawLength: number): Buffer | Refusal {
  if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
  const limits = inflateLimits(rawLength)
  let raw: Buffer
  if (compression === GZIP) raw = gunzipSync(stored, limits)
  else if (compression === BROTLI) raw = brotliDecompressSync(stored, limits)
  else if (compression === NONE) raw = stored
  else return refuse(`unknown snapshot compression ${compression}`)
  if (raw.length !== rawLength) return refuse(`snapshot pages are ${raw.length} bytes, the header says ${rawLength}`)
  // Node 24 hands a sync result under 64 KiB out as a view into a slab shared with other results
  // (Node 22 only under 4 KiB, from its 8 KiB pool), whatever the chunk size: the details kept as
  // views of one part would hold the others' bytes too, so such a part gets a buffer of its own.
  if (raw !== stored && raw.buffer.byteLength !== raw.length) return ownCopy(raw)
  return raw
}

/** The decoded snapshot, or the reason a buffer was refused. Never throws. */
export function tryDecodeSnapshot(stored: Buffer | CheckedSnapshot): DecodeResult {
  try {
    const result = Buffer.isBuffer(stored) ? readFrame(stored) : { ok: true as const, frame: stored.checked }
    if (!result.ok) return result
    const { metadata, compression, rawLength, pages, parts, groups } = result.frame
    if (parts) return decodeParts(compression, pages, parts, groups, metadata)
    const raw = inflate(compression, pages, rawLength)
    return Buffer.isBuffer(raw) ? parsePages(raw, metadata) : raw
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

const FIELDS_ROW_LENGTH = 12

/** A copy in a buffer of its own (`Buffer.from` would put a small one in the shared pool). */
function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length)
  bytes.copy(copy)
  return copy
}

type PartTable = readonly (readonly [number, number])[]

/** Each part's stored bytes and uncompressed length, and whether it holds details: format 4's second of each group, format 3's third on. */
function* partsOf(pages: Buffer, parts: PartTable, grouped: boolean): Generator<{ index: number; stored: Buffer; rawLength: number; details: boolean }> {
  let at = 0
  for (const [index, [storedLength, rawLength]] of parts.entries()) {
    yield { index, stored: pages.subarray(at, at + storedLength), rawLength, details: grouped ? index % 2 === 1 : index >= 2 }
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

/** The parts as {@link pagesOfParts} takes them: the others uncompressed, the details parts kept as {@link detailsPart}. */
interface SplitParts {
  readonly heads: Buffer[]
  readonly details: DetailsPart[]
}

/**
 * Formats 3 and 4: the parts that are not details decompressed one after another, the details
 * parts deferred, then their pages ({@link pagesOfParts}).
 */
function decodeParts(compression: number, stored: Buffer, parts: PartTable, groups: PartTable | undefined, metadata: StoredMetadata): DecodeResult {
  const split: SplitParts = { heads: [], details: [] }
  for (const { index, stored: bytes, rawLength, details } of partsOf(stored, parts, groups !== undefined)) {
    const part = details ? detailsPart(compression, bytes, rawLength, index) : inflate(compression, bytes, rawLength)
    if ('ok' in part) return part
    if (Buffer.isBuffer(part)) split.heads.push(part)
    else split.details.push(part)
  }
  return pagesOfParts(split, groups, metadata)
}

const brotliDecompressAsync = promisify(brotliDecompress)
const gunzipAsync = promisify(gunzip)

/** Parts decompressed at once on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise). */
const PARALLEL_INFLATES = 4

/** {@link inflate} on libuv's thread pool. */
async function inflateAsync(compression: number, stored: Buffer, rawLength: number): Promise<Buffer | Refusal> {
  if (compression !== GZIP && compression !== BROTLI) return inflate(compression, stored, rawLength)
  if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
  const limits = inflateLimits(rawLength)
  const raw = compression === GZIP ? await gunzipAsync(stored, limits) : await brotliDecompressAsync(stored, limits)
  if (raw.length !== rawLength) return refuse(`snapshot pages are ${raw.length} bytes, the header says ${rawLength}`)
  // Node 24 hands a sync result under 64 KiB out as a view into a slab shared with other results
  // (Node 22 only under 4 KiB, from its 8 KiB pool), whatever the chunk size: the details kept as
  // views of one part would hold the others' bytes too, so such a part gets a buffer of its own.
  if (raw !== stored && raw.buffer.byteLength !== raw.length) return ownCopy(raw)
  return raw
}

/**
 * {@link tryDecodeSnapshot} with the parts that are not details decompressed on libuv's thread
 * pool, several at once, so that a follower loading a whole snapshot keeps answering meanwhile.
 * Never rejects.
 */
export async function tryDecodeSnapshotAsync(buf: Buffer): Promise<DecodeResult> {
  try {
    const result = readFrame(buf)
    if (!result.ok) return result
    const { metadata, compression, pages, parts, groups } = result.frame
    if (!parts) return tryDecodeSnapshot(buf)
    const split: SplitParts = { heads: [], details: [] }
    const inflating: { index: number; stored: Buffer; rawLength: number }[] = []
    for (const { index, stored, rawLength, details } of partsOf(pages, parts, groups !== undefined)) {
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
    return refusal ?? pagesOfParts(split, groups, metadata)
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

const EMPTY = Buffer.alloc(0)

/**
 * The pages from the parts. Format 3: the fields part (one JSON array, a row per page), the texts
 * part (every listing item's UTF-8 bytes, in page order) and the details parts (every detail's
 * bytes, in page order, a part ending on a page boundary). Format 4: the same for each group, its
 * fields and texts in one head part and its details in one part. Each page keeps the digest it
 * was stored with and its detail as a body of its part, so loading copies, hashes and (compressed)
 * decompresses no page's detail: the checksum over the whole buffer already vouches for the bytes,
 * and the rebuilt fingerprint for the digests' places.
 */
function pagesOfParts({ heads, details }: SplitParts, groups: PartTable | undefined, metadata: StoredMetadata): DecodeResult {
  const { pageCount, ...rest } = metadata
  const pages = new Array<SyncedPage>(pageCount)
  if (groups === undefined) {
    const [fieldsPart, texts] = heads as [Buffer, Buffer]
    const rows = JSON.parse(fieldsPart.toString('utf8')) as unknown
    if (!Array.isArray(rows) || rows.length !== pageCount) return refuse(`snapshot holds ${Array.isArray(rows) ? rows.length : 0} of its ${pageCount} pages`)
    const why = readRows(rows, texts, details, pages, 0)
    return why === undefined ? { ok: true, decoded: { ...rest, pages } } : refuse(why)
  }
  let first = 0
  for (const [index, [count, fieldsBytes]] of groups.entries()) {
    const head = heads[index]!
    const rows = JSON.parse(head.toString('utf8', 0, fieldsBytes)) as unknown
    if (!Array.isArray(rows) || rows.length !== count) return refuse(`snapshot group #${index} holds ${Array.isArray(rows) ? rows.length : 0} of its ${count} pages`)
    const why = readRows(rows, head.subarray(fieldsBytes), [details[index]!], pages, first)
    if (why !== undefined) return refuse(why)
    first += count
  }
  return { ok: true, decoded: { ...rest, pages } }
}

/**
 * Decodes `rows` with their `texts` and `details` into `pages` from `pages[first]` on, or says
 * why they do not fit together. Every text and every detail byte must belong to a page.
 */
function readRows(rows: readonly unknown[], texts: Buffer, details: readonly DetailsPart[], pages: SyncedPage[], first: number): string | undefined {
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

function parsePages(raw: Buffer, metadata: StoredMetadata): DecodeResult {
  const { pageCount, ...rest } = metadata
  const pages: SyncedPage[] = []
  let start = 0
  for (let index = 0; index < pageCount; index++) {
    const end = raw.indexOf(0x0a, start)
    if (end < 0) return refuse(`snapshot holds ${index} of its ${pageCount} pages`)
    const page = readPage(JSON.parse(raw.toString('utf8', start, end)) as unknown)
    if (!page) return refuse(`snapshot page #${index} is malformed`)
    pages.push(page)
    start = end + 1
  }
  if (start !== raw.length) return refuse('snapshot has data after its last page')
  return { ok: true, decoded: { ...rest, pages } }
}

/** The metadata, or why it is not valid (a patch's too: it starts with the same fields). */
export function readMetadata(value: unknown, formatVersion: number): StoredMetadata | string {
  if (!isObject(value)) return 'snapshot metadata is not an object'
  const { upstreamUrl, baseUrl, syncedAt, fullSyncedAt, version, fingerprint, dialect, pageCount } = value
  if (typeof upstreamUrl !== 'string' || typeof baseUrl !== 'string') return 'snapshot metadata lacks its URLs'
  if (typeof syncedAt !== 'number' || !Number.isFinite(syncedAt)) return 'snapshot metadata has no valid syncedAt'
  if (!isCount(version)) return 'snapshot metadata has no valid version'
  if (typeof fingerprint !== 'string' || fingerprint === '') return 'snapshot metadata has no fingerprint'
  if (!isCount(pageCount)) return 'snapshot metadata has no valid page count'
  const parsedDialect = readDialect(dialect)
  if (!parsedDialect) return 'snapshot metadata has no valid dialect'
  const full = typeof fullSyncedAt === 'number' && Number.isFinite(fullSyncedAt) ? fullSyncedAt : 0
  return { upstreamUrl, baseUrl, syncedAt, fullSyncedAt: full, version, fingerprint, dialect: parsedDialect, pageCount, formatVersion }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** A stored dialect, the fields learned later read as their defaults when absent. */
function readDialect(value: unknown): Dialect | undefined {
  if (!isObject(value)) return undefined
  const { limitMax, emptyTypeIgnored, findKeepsQuery, nulInTextFilter, notAcceptableText } = value
  if (limitMax !== null && !isCount(limitMax)) return undefined
  if (typeof emptyTypeIgnored !== 'boolean' || typeof findKeepsQuery !== 'boolean') return undefined
  // Learned later than the others: a snapshot stored before has none, and gets the refusal.
  return {
    limitMax, emptyTypeIgnored, findKeepsQuery,
    nulInTextFilter: nulInTextFilter === 'matches-nothing' ? 'matches-nothing' : 'refused',
    notAcceptableText: typeof notAcceptableText === 'string' && notAcceptableText !== '' ? notAcceptableText : NOT_ACCEPTABLE_TEXT,
  }
}

/** One parsed page line, or `undefined` when it is not one. */
export function readPage(line: unknown): SyncedPage | undefined {
  if (!Array.isArray(line) || (line.length !== 10 && line.length !== 11)) return undefined
  const [id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, listItem, detail, typedListItem] = line as unknown[]
  if (!Number.isSafeInteger(id)) return undefined
  if (parentId !== null && !Number.isSafeInteger(parentId)) return undefined
  if (typeof showInMenus !== 'boolean') return undefined
  if (
    typeof type !== 'string' || typeof title !== 'string' || typeof slug !== 'string' || typeof seoTitle !== 'string' ||
    typeof searchDescription !== 'string' || typeof listItem !== 'string' || typeof detail !== 'string'
  ) return undefined
  if (line.length === 11 && typeof typedListItem !== 'string') return undefined
  const page: SyncedPage = {
    id: id as number, type, title, slug, showInMenus, seoTitle, searchDescription, parentId: parentId as number | null, listItem, detail,
  }
  return typeof typedListItem === 'string' ? { ...page, typedListItem } : page
}

/**
 * One page as {@link buildSnapshot} took it: building them again gives the same fingerprint and
 * the same bytes per page. (The detail is kept as UTF-8 bytes, and the fingerprint hashes the
 * detail's UTF-8 bytes, so decoding them loses nothing that counts.)
 */
export function syncedPageOf(record: PageRecord): SyncedPage {
  const { digest: _digest, from: _from, ...page } = carryOver(record)
  return { ...page, detail: bytesOf(record.detail).toString('utf8') }
}

export function metadataOf(snapshot: Snapshot, origin: SnapshotOrigin): SnapshotMetadata {
  return {
    dialect: snapshot.dialect,
    upstreamUrl: origin.upstreamUrl,
    baseUrl: origin.baseUrl,
    syncedAt: snapshot.syncedAt,
    fullSyncedAt: snapshot.fullSyncedAt,
    version: snapshot.version,
    fingerprint: snapshot.fingerprint,
  }
}

/**
 * Why a decoded snapshot must not be served under this configuration, or `undefined` when it may.
 * Another BASE_URL is no reason: {@link rebaseDecoded} points its `detail_url`s at this one.
 */
export function originMismatch(decoded: SnapshotMetadata, expected: SnapshotOrigin): string | undefined {
  if (!sameBaseUrl(decoded.upstreamUrl, expected.upstreamUrl)) {
    return `snapshot was synced from UPSTREAM_URL ${decoded.upstreamUrl}, not ${expected.upstreamUrl}`
  }
  return undefined
}

/** The decoded snapshot with its bodies' `detail_url`s on `baseUrl` (itself when they already are). */
export function rebaseDecoded(decoded: DecodedSnapshot, baseUrl: string): DecodedSnapshot {
  if (sameBaseUrl(decoded.baseUrl, baseUrl)) return decoded
  return { ...decoded, baseUrl, pages: rebasePages(decoded.pages, decoded.baseUrl, baseUrl) }
}

/** Rebuilds the snapshot with {@link buildSnapshot}; refused unless its fingerprint is the stored one. */
export function rebuildFromDecoded(decoded: DecodedSnapshot): LoadResult {
  let snapshot: Snapshot
  try {
    snapshot = buildSnapshot(decoded.pages, {
      version: decoded.version,
      syncedAt: decoded.syncedAt,
      fullSyncedAt: decoded.fullSyncedAt ?? 0,
      dialect: decoded.dialect,
    })
  } catch (caught) {
    if (caught instanceof TreeInconsistentError) return { ok: false, reason: `stored ${caught.message}` }
    return { ok: false, reason: `snapshot could not be rebuilt: ${caught instanceof Error ? caught.message : String(caught)}` }
  }
  if (snapshot.fingerprint !== decoded.fingerprint) {
    return { ok: false, reason: `rebuilt fingerprint ${snapshot.fingerprint} is not the stored ${decoded.fingerprint}` }
  }
  return { ok: true, snapshot, decoded }
}

/** Decode, check it was made for this configuration, rebuild. Never throws; a refusal says why. */
export function loadSnapshot(buf: Buffer, expected: SnapshotOrigin): LoadResult {
  const result = tryDecodeSnapshot(buf)
  if (!result.ok) return result
  const mismatch = originMismatch(result.decoded, expected)
  if (mismatch !== undefined) return { ok: false, reason: mismatch }
  return rebuildFromDecoded(rebaseDecoded(result.decoded, expected.baseUrl))
}
