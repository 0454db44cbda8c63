/**
 * The stored form of a snapshot (a file, a Redis key): versioned, checksummed, compressed.
 *
 * ```
 * offset  size  field
 *      0     7  magic "CMSSHLD"
 *      7     1  format version (u8): SNAPSHOT_FORMAT_VERSION
 *      8     1  compression of the pages (u8): 1 = gzip, 2 = brotli
 *      9     4  metadata length M (u32, big-endian)
 *     13     4  uncompressed length of the pages (u32, big-endian)
 *     17    32  SHA-256 of bytes 0..17 followed by every byte from offset 49 on
 *     49     M  metadata: one JSON object, uncompressed
 *   49+M     …  pages, compressed
 * ```
 *
 * The metadata (UPSTREAM_URL, BASE_URL, syncedAt, version, fingerprint, dialect, page count) is
 * stored uncompressed so that choosing among several stored snapshots costs a checksum, not a
 * decompression and a parse of each. The pages are newline-delimited JSON, one line per page in
 * tree order: a positional array `[id, type, title, slug, showInMenus, seoTitle,
 * searchDescription, parentId, listItem, detail]`, with `typedListItem` appended when the page has
 * one. JSON round-trips strings exactly, so `listItem` and `detail` come back byte for byte; one
 * line per page keeps every string far below V8's maximum string length however large the tree.
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
import { pipeline } from 'node:stream/promises'
import {
  brotliDecompressSync, constants as zlib, createBrotliCompress, createGzip, gunzipSync, type BrotliOptions, type ZlibOptions,
} from 'node:zlib'
import { buildSnapshot, carryOver, TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import type { Dialect, PageRecord, Snapshot } from '../tree/snapshot.js'
import { rebasePages, sameBaseUrl } from './rebase-snapshot.js'
import { NOT_ACCEPTABLE_TEXT } from '../query/wagtail-messages.js'

/**
 * The format this build writes and the only one it reads. 2: the fingerprint hashes per-block
 * digests (`build-snapshot.ts`), so a version-1 snapshot could not be rebuilt to its own.
 */
const SNAPSHOT_FORMAT_VERSION = 2

const MAGIC = Buffer.from('CMSSHLD', 'latin1')
const HASHED_HEADER_BYTES = 17
const HEADER_BYTES = HASHED_HEADER_BYTES + 32
const GZIP = 1
const BROTLI = 2
const MAX_U32 = 0xffff_ffff

export type SnapshotCompression = 'gzip' | 'brotli'

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

const NEWLINE = Buffer.from('\n')
const BROTLI_QUALITY = 4
const GZIP_LEVEL = 6
/** The async encoder lets requests run after about this many bytes of pages. */
const YIELD_EVERY_BYTES = 1 << 20

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

function metadataBytes(input: SnapshotMetadata, pageCount: number): Buffer {
  return Buffer.from(JSON.stringify({ ...metadataFields(input), pageCount }), 'utf8')
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
  header.writeUInt8(compression === 'gzip' ? GZIP : BROTLI, 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(rawLength, 13)
  createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata).update(pages).digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, pages])
}

const STREAM_CHUNK_BYTES = 64 << 10
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Encoding for a live server: the pages are serialised about a megabyte at a time with the event
 * loop let through in between, and compressed as a stream on libuv's thread pool.
 */
async function encodeInSlices(
  metadata: SnapshotMetadata, count: number, pageAt: (index: number) => SyncedPage, options: EncodeOptions,
): Promise<Buffer> {
  const compression = options.compression ?? 'brotli'
  let rawLength = 0
  // Slices of about YIELD_EVERY_BYTES, each serialised in one go, then handed to the compressor;
  // the whole uncompressed payload is never held at once.
  async function* slices(): AsyncGenerator<Buffer> {
    let pending: Buffer[] = []
    let pendingBytes = 0
    for (let index = 0; index < count; index++) {
      const line = pageLine(pageAt(index))
      pending.push(line, NEWLINE)
      pendingBytes += line.length + 1
      if (pendingBytes >= YIELD_EVERY_BYTES || index === count - 1) {
        rawLength += pendingBytes
        yield Buffer.concat(pending, pendingBytes)
        pending = []
        pendingBytes = 0
        await yieldToEventLoop()
      }
    }
  }
  const output: Buffer[] = []
  const compressor = compression === 'gzip'
    ? createGzip({ ...gzipOptions, chunkSize: STREAM_CHUNK_BYTES })
    : createBrotliCompress({ ...brotliOptions, chunkSize: STREAM_CHUNK_BYTES })
  await pipeline(slices, compressor, async (compressed: AsyncIterable<Buffer>) => {
    for await (const chunk of compressed) output.push(chunk)
  })
  return frame(compression, metadataBytes(metadata, count), rawLength, Buffer.concat(output))
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
}

/** Checks magic, format version and checksum, and reads the metadata. */
function readFrame(buf: Buffer): { ok: true; frame: Frame } | Refusal {
  if (!Buffer.isBuffer(buf)) return refuse('not a buffer')
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return refuse('not a cms-shield snapshot (no CMSSHLD magic)')
  if (buf.length < HEADER_BYTES) return refuse(`truncated snapshot (${buf.length} bytes, shorter than its header)`)
  const formatVersion = buf.readUInt8(7)
  if (formatVersion !== SNAPSHOT_FORMAT_VERSION) {
    return refuse(`snapshot format version ${formatVersion}; this build reads version ${SNAPSHOT_FORMAT_VERSION}`)
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
  return { ok: true, frame: { metadata, compression, rawLength, pages: buf.subarray(HEADER_BYTES + metadataLength) } }
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

/** The decoded snapshot, or the reason a buffer was refused. Never throws. */
export function tryDecodeSnapshot(buf: Buffer): DecodeResult {
  try {
    const result = readFrame(buf)
    if (!result.ok) return result
    const { metadata, compression, rawLength, pages } = result.frame
    if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
    // maxOutputLength bounds the work a mislabelled body can cause.
    const limits = { maxOutputLength: Math.max(rawLength, 1) }
    let raw: Buffer
    if (compression === GZIP) raw = gunzipSync(pages, limits)
    else if (compression === BROTLI) raw = brotliDecompressSync(pages, limits)
    else return refuse(`unknown snapshot compression ${compression}`)
    if (raw.length !== rawLength) return refuse(`snapshot pages are ${raw.length} bytes, the header says ${rawLength}`)
    return parsePages(raw, metadata)
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
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
 * the event loop for long (see {@link encodeInSlices}).
 */
export function encodeSnapshotOfAsync(snapshot: Snapshot, origin: SnapshotOrigin, options: EncodeOptions = {}): Promise<Buffer> {
  return encodeInSlices(metadataOf(snapshot, origin), snapshot.pages.length, (index) => syncedPageOf(snapshot.pages[index]!), options)
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
