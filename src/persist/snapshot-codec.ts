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
 * Format 3 (written): the metadata also holds `parts`, each part's stored and uncompressed
 * length, and the pages are those parts, each compressed on its own:
 *
 * - the fields: one JSON array with a row per page in tree order, `[id, type, title, slug,
 *   showInMenus, seoTitle, searchDescription, parentId, digest, listItem bytes, typedListItem
 *   bytes (-1: none), detail bytes]`;
 * - the texts: every page's `listItem` and then its `typedListItem`, as UTF-8, in tree order;
 * - the details: every page's detail body, in tree order, in parts of about one slab
 *   (`json/byte-slabs.ts`) that end on a page boundary.
 *
 * Loading then parses one small JSON text, not every body; each detail is a view of the part it
 * was decompressed into (the part is its slab), and each page keeps its stored digest, so nothing
 * is copied or hashed per page. The checksum over the whole buffer vouches for the bytes, and the
 * fingerprint, rebuilt from the digests, for their places.
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
import { SLAB_BYTES } from '../json/byte-slabs.js'
import { buildSnapshot, carryOver, TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import type { Dialect, PageRecord, Snapshot } from '../tree/snapshot.js'
import { rebasePages, sameBaseUrl } from './rebase-snapshot.js'
import { NOT_ACCEPTABLE_TEXT } from '../query/wagtail-messages.js'

/**
 * The format this build writes. 3: the pages in parts, each page's digest and detail bytes as
 * stored (docs/performance.md, "Warm start from Redis"). 2 is still read; a version-1 snapshot
 * could not be rebuilt to its own fingerprint (it hashed pages, not per-block digests).
 */
const SNAPSHOT_FORMAT_VERSION = 3
/** Pages as JSON lines, each page's digest and detail computed again on load: still read. */
const LINES_FORMAT_VERSION = 2

const MAGIC = Buffer.from('CMSSHLD', 'latin1')
const HASHED_HEADER_BYTES = 17
const HEADER_BYTES = HASHED_HEADER_BYTES + 32
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
export type MetadataResult = { readonly ok: true; readonly metadata: StoredMetadata } | Refusal
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
/** The async encoder lets requests run after this many pages. */
const YIELD_EVERY_PAGES = 1024
/** A details part ends before it would pass this (unless one page alone does): one slab (`byte-slabs.ts`). */
const DETAIL_PART_BYTES = SLAB_BYTES

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

function frame(compression: SnapshotCompression, metadata: Buffer, rawLength: number, pages: Buffer): Buffer {
  if (rawLength > MAX_U32 || metadata.length > MAX_U32) throw new RangeError(`a snapshot of ${rawLength} bytes is too large to store`)
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeUInt8(SNAPSHOT_FORMAT_VERSION, 7)
  header.writeUInt8(compression === 'gzip' ? GZIP : compression === 'none' ? NONE : BROTLI, 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(rawLength, 13)
  createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata).update(pages).digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, pages])
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))
const brotliCompressAsync = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

function compressPart(compression: SnapshotCompression, raw: Buffer): Promise<Buffer> {
  if (compression === 'none') return Promise.resolve(raw)
  return compression === 'gzip' ? gzipAsync(raw, gzipOptions) : brotliCompressAsync(raw, brotliOptions)
}

/** One page's row in the fields part (format 3): its fields, digest and the byte lengths of its texts. */
function fieldsRow(record: PageRecord, listItem: Buffer, typed: Buffer | undefined): string {
  return JSON.stringify([
    record.id, record.type, record.title, record.slug, record.showInMenus, record.seoTitle, record.searchDescription, record.parentId,
    record.digest, listItem.length, typed === undefined ? -1 : typed.length, record.detail.length,
  ])
}

/**
 * Encoding for a live server (format 3): the parts are gathered a slice of pages at a time with the
 * event loop let through in between, and each is compressed on libuv's thread pool.
 */
async function encodeParts(metadata: SnapshotMetadata, records: readonly PageRecord[], options: EncodeOptions): Promise<Buffer> {
  const compression = options.compression ?? 'brotli'
  const rows: string[] = []
  const texts: Buffer[] = []
  const detailParts: Buffer[] = []
  let pending: Buffer[] = []
  let pendingBytes = 0
  const closeDetailPart = () => {
    if (pending.length > 0) detailParts.push(Buffer.concat(pending, pendingBytes))
    pending = []
    pendingBytes = 0
  }
  for (let index = 0; index < records.length; index++) {
    const record = records[index]!
    const listItem = Buffer.from(record.listItem, 'utf8')
    const typed = record.typedListItem === undefined ? undefined : Buffer.from(record.typedListItem, 'utf8')
    rows.push(fieldsRow(record, listItem, typed))
    texts.push(listItem)
    if (typed) texts.push(typed)
    // Parts end on page boundaries, about a slab each: decoded, each part is the slab its pages' details stay in.
    if (pendingBytes > 0 && pendingBytes + record.detail.length > DETAIL_PART_BYTES) closeDetailPart()
    pending.push(record.detail)
    pendingBytes += record.detail.length
    if (index % YIELD_EVERY_PAGES === YIELD_EVERY_PAGES - 1) await yieldToEventLoop()
  }
  closeDetailPart()
  const raws = [Buffer.from(`[${rows.join(',')}]`, 'utf8'), Buffer.concat(texts), ...detailParts]
  const stored: Buffer[] = []
  for (const raw of raws) stored.push(await compressPart(compression, raw))
  const partTable = raws.map((raw, i) => [stored[i]!.length, raw.length])
  const rawLength = raws.reduce((sum, raw) => sum + raw.length, 0)
  const metadataJson = Buffer.from(JSON.stringify({ ...metadataFields(metadata), pageCount: records.length, parts: partTable }), 'utf8')
  return frame(compression, metadataJson, rawLength, Buffer.concat(stored))
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
  /** Format 3: each part's stored and uncompressed length, in order. */
  readonly parts?: readonly (readonly [stored: number, raw: number])[]
}

/** The part table of a format-3 snapshot, or why it is not valid. */
function readParts(value: unknown, storedLength: number, rawLength: number): [number, number][] | string {
  if (!Array.isArray(value) || value.length < 2) return 'snapshot metadata has no valid part table'
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

/** Checks magic, format version and checksum, and reads the metadata. */
function readFrame(buf: Buffer): { ok: true; frame: Frame } | Refusal {
  if (!Buffer.isBuffer(buf)) return refuse('not a buffer')
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return refuse('not a cms-shield snapshot (no CMSSHLD magic)')
  if (buf.length < HEADER_BYTES) return refuse(`truncated snapshot (${buf.length} bytes, shorter than its header)`)
  const formatVersion = buf.readUInt8(7)
  if (formatVersion !== SNAPSHOT_FORMAT_VERSION && formatVersion !== LINES_FORMAT_VERSION) {
    return refuse(`snapshot format version ${formatVersion}; this build reads versions ${LINES_FORMAT_VERSION} and ${SNAPSHOT_FORMAT_VERSION}`)
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
  const parts = readParts((parsed as Record<string, unknown>)['parts'], pages.length, rawLength)
  if (typeof parts === 'string') return refuse(parts)
  return { ok: true, frame: { metadata, compression, rawLength, pages, parts } }
}

/**
 * The metadata of an intact snapshot without decompressing its pages (a checksum over the whole
 * buffer is still computed). Never throws.
 */
export function readSnapshotMetadata(buf: Buffer): MetadataResult {
  try {
    const result = readFrame(buf)
    return result.ok ? { ok: true, metadata: result.frame.metadata } : result
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
  return raw
}

/** The decoded snapshot, or the reason a buffer was refused. Never throws. */
export function tryDecodeSnapshot(buf: Buffer): DecodeResult {
  try {
    const result = readFrame(buf)
    if (!result.ok) return result
    const { metadata, compression, rawLength, pages, parts } = result.frame
    if (parts) return decodeParts(compression, pages, parts, metadata)
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

/**
 * Format 3: the fields part (one JSON array, a row per page), the texts part (every listing item's
 * UTF-8 bytes, in page order) and the details parts (every detail's bytes, in page order, a part
 * ending on a page boundary). Each page keeps the digest it was stored with and a view of its
 * detail in its part, so loading copies and hashes no page's bytes: the checksum over the whole
 * buffer already vouches for them, and the rebuilt fingerprint for the digests' places.
 */
function decodeParts(compression: number, stored: Buffer, parts: readonly (readonly [number, number])[], metadata: StoredMetadata): DecodeResult {
  const raws: Buffer[] = []
  let at = 0
  for (const [storedLength, rawLength] of parts) {
    const raw = inflate(compression, stored.subarray(at, at + storedLength), rawLength)
    if (!Buffer.isBuffer(raw)) return raw
    raws.push(raw)
    at += storedLength
  }
  return pagesOfParts(compression, raws, metadata)
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
  return raw
}

/**
 * {@link tryDecodeSnapshot} with the parts of a format-3 snapshot decompressed on libuv's thread
 * pool, several at once: a start from Redis decompresses on the machine's other cores, and a
 * follower loading a whole snapshot keeps answering meanwhile. Never rejects.
 */
export async function tryDecodeSnapshotAsync(buf: Buffer): Promise<DecodeResult> {
  try {
    const result = readFrame(buf)
    if (!result.ok) return result
    const { metadata, compression, pages, parts } = result.frame
    if (!parts) return tryDecodeSnapshot(buf)
    const starts: number[] = []
    parts.reduce((at, [storedLength]) => (starts.push(at), at + storedLength), 0)
    const raws = new Array<Buffer>(parts.length)
    let next = 0
    let refusal: Refusal | undefined
    const worker = async () => {
      while (refusal === undefined && next < parts.length) {
        const index = next++
        const [storedLength, rawLength] = parts[index]!
        const raw = await inflateAsync(compression, pages.subarray(starts[index]!, starts[index]! + storedLength), rawLength)
        if (Buffer.isBuffer(raw)) raws[index] = raw
        else refusal = raw
      }
    }
    await Promise.all(Array.from({ length: Math.min(PARALLEL_INFLATES, parts.length) }, worker))
    return refusal ?? pagesOfParts(compression, raws, metadata)
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

/** The pages of a format-3 snapshot from its parts, uncompressed (see {@link decodeParts}). */
function pagesOfParts(compression: number, raws: Buffer[], metadata: StoredMetadata): DecodeResult {
  const [fieldsPart, texts, ...details] = raws as [Buffer, Buffer, ...Buffer[]]
  // Uncompressed parts are views of the stored buffer: each details part gets its own copy, so
  // that the pages do not keep the stored buffer alive.
  if (compression === NONE) details.forEach((part, index) => (details[index] = ownCopy(part)))
  const rows = JSON.parse(fieldsPart.toString('utf8')) as unknown
  const { pageCount, ...rest } = metadata
  if (!Array.isArray(rows) || rows.length !== pageCount) return refuse(`snapshot holds ${Array.isArray(rows) ? rows.length : 0} of its ${pageCount} pages`)
  const pages = new Array<SyncedPage>(pageCount)
  let textAt = 0
  let part = 0
  let detailAt = 0
  for (let index = 0; index < pageCount; index++) {
    const row = rows[index] as unknown
    if (!Array.isArray(row) || row.length !== FIELDS_ROW_LENGTH) return refuse(`snapshot page #${index} is malformed`)
    const [id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, digest, listLength, typedLength, detailLength] = row as unknown[]
    if (typeof digest !== 'string' || digest === '' || !isCount(listLength) || !isCount(detailLength)) return refuse(`snapshot page #${index} is malformed`)
    if (typedLength !== -1 && !isCount(typedLength)) return refuse(`snapshot page #${index} is malformed`)
    const textEnd = textAt + listLength + (typedLength === -1 ? 0 : typedLength)
    if (textEnd > texts.length) return refuse(`snapshot page #${index} runs past its texts`)
    const listItem = texts.toString('utf8', textAt, textAt + listLength)
    const typedListItem = typedLength === -1 ? undefined : texts.toString('utf8', textAt + listLength, textEnd)
    textAt = textEnd
    // A page's detail is never split: an exhausted part hands over to the next.
    if (part < details.length && detailAt === details[part]!.length && detailLength > 0) {
      part++
      detailAt = 0
    }
    const holder = details[part]
    if (detailLength > 0 && (holder === undefined || detailAt + detailLength > holder.length)) return refuse(`snapshot page #${index} runs past its details`)
    const detail = holder === undefined ? Buffer.alloc(0) : holder.subarray(detailAt, detailAt + detailLength)
    detailAt += detailLength
    const page = readPage([id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, listItem, '', ...(typedListItem === undefined ? [] : [typedListItem])])
    if (!page) return refuse(`snapshot page #${index} is malformed`)
    pages[index] = { ...page, detail, digest }
  }
  if (textAt !== texts.length || part !== Math.max(details.length - 1, 0) || (details.length > 0 && detailAt !== details[part]!.length)) {
    return refuse('snapshot has data after its last page')
  }
  return { ok: true, decoded: { ...rest, pages } }
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

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** A stored dialect, the fields learned later read as their defaults when absent. */
export function readDialect(value: unknown): Dialect | undefined {
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
  return { ...page, detail: record.detail.toString('utf8') }
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
 * Encodes a live snapshot, stamped with the configuration it was synced under, without blocking
 * the event loop for long (see {@link encodeParts}).
 */
export function encodeSnapshotOfAsync(snapshot: Snapshot, origin: SnapshotOrigin, options: EncodeOptions = {}): Promise<Buffer> {
  return encodeParts(metadataOf(snapshot, origin), snapshot.pages, options)
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
