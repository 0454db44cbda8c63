/**
 * Snapshot bytes for tests, written without the production encoder: a second, one-shot writer of
 * the stored layout described in `src/persist/snapshot-codec.ts`, so the decoder is tested against
 * the format and not only against its own encoder. Also the short forms tests like (`decodeSnapshot`
 * answers `undefined` instead of a refusal), built on what production uses.
 */
import { createHash } from 'node:crypto'
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib'
import { carryOver, pageDigest, type SyncedPage } from '../../src/tree/build-snapshot.js'
import { bytesOf } from '../../src/tree/detail-body.js'
import type { PageRecord, Snapshot } from '../../src/tree/snapshot.js'
import {
  rebuildFromDecoded, tryDecodeSnapshot, type DecodeResult, type DecodedSnapshot, type EncodeOptions, type SnapshotMetadata, type SnapshotOrigin,
} from '../../src/persist/snapshot-codec.js'

/**
 * The format version these bytes claim: 2, pages as JSON lines, which the codec still reads (it
 * writes 4, whose layout `snapshot-codec.test.ts` checks part by part; {@link encodeFormat3}
 * writes the 3 it also still reads).
 */
export const SNAPSHOT_FORMAT_VERSION = 2

export interface EncodeInput extends SnapshotMetadata {
  readonly pages: readonly SyncedPage[]
}

const HEADER_BYTES = 49
const HASHED_HEADER_BYTES = 17

/** Encodes in one go, as the stored layout says (the production encoder streams). */
export function encodeSnapshot(input: EncodeInput, options: EncodeOptions = {}): Buffer {
  const compression = options.compression ?? 'brotli'
  const metadata = Buffer.from(JSON.stringify({ ...metadataOf(input), pageCount: input.pages.length }))
  const raw = Buffer.from(input.pages.map((page) => `${JSON.stringify(pageLine(page))}\n`).join(''))
  const pages = compression === 'gzip'
    ? gzipSync(raw)
    : brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT } })
  const header = Buffer.alloc(HEADER_BYTES)
  header.write('CMSSHLD', 0, 'latin1')
  header.writeUInt8(SNAPSHOT_FORMAT_VERSION, 7)
  header.writeUInt8(compression === 'gzip' ? 1 : 2, 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(raw.length, 13)
  createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata).update(pages).digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, pages])
}

/**
 * Format 3 in one go, as the codec's doc comment describes it: a fields part (a row per page), a
 * texts part, then the details in parts of at most `detailPartBytes` that end on a page boundary.
 */
export function encodeFormat3(input: EncodeInput, options: EncodeOptions & { readonly detailPartBytes?: number } = {}): Buffer {
  const compression = options.compression ?? 'brotli'
  const limit = options.detailPartBytes ?? 256 * 1024
  const rows: unknown[] = []
  const texts: Buffer[] = []
  const detailParts: Buffer[][] = [[]]
  let partBytes = 0
  for (const page of input.pages) {
    const listItem = Buffer.from(page.listItem)
    const typed = page.typedListItem === undefined ? undefined : Buffer.from(page.typedListItem)
    const detail = typeof page.detail === 'string' ? Buffer.from(page.detail) : bytesOf(page.detail)
    rows.push([
      page.id, page.type, page.title, page.slug, page.showInMenus, page.seoTitle, page.searchDescription, page.parentId,
      page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail), listItem.length, typed === undefined ? -1 : typed.length, detail.length,
    ])
    texts.push(listItem, ...(typed === undefined ? [] : [typed]))
    if (partBytes > 0 && partBytes + detail.length > limit) {
      detailParts.push([])
      partBytes = 0
    }
    detailParts.at(-1)!.push(detail)
    partBytes += detail.length
  }
  const raws = [Buffer.from(JSON.stringify(rows)), Buffer.concat(texts), ...detailParts.map((part) => Buffer.concat(part))]
  const compress = (raw: Buffer) => compression === 'none' ? raw : compression === 'gzip' ? gzipSync(raw) : brotliCompressSync(raw)
  const stored = raws.map(compress)
  const metadata = Buffer.from(JSON.stringify({ ...metadataOf(input), pageCount: input.pages.length, parts: raws.map((raw, i) => [stored[i]!.length, raw.length]) }))
  const header = Buffer.alloc(HEADER_BYTES)
  header.write('CMSSHLD', 0, 'latin1')
  header.writeUInt8(3, 7)
  header.writeUInt8(compression === 'gzip' ? 1 : compression === 'none' ? 0 : 2, 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(raws.reduce((sum, raw) => sum + raw.length, 0), 13)
  const hash = createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata)
  for (const part of stored) hash.update(part)
  hash.digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, ...stored])
}

function metadataOf(input: EncodeInput): Record<string, unknown> {
  const { dialect } = input
  return {
    upstreamUrl: input.upstreamUrl, baseUrl: input.baseUrl, syncedAt: input.syncedAt, fullSyncedAt: input.fullSyncedAt ?? input.syncedAt,
    version: input.version, fingerprint: input.fingerprint,
    dialect: {
      limitMax: dialect.limitMax, emptyTypeIgnored: dialect.emptyTypeIgnored, findKeepsQuery: dialect.findKeepsQuery,
      nulInTextFilter: dialect.nulInTextFilter, notAcceptableText: dialect.notAcceptableText,
    },
  }
}

function pageLine(page: SyncedPage): unknown[] {
  const line: unknown[] = [
    page.id, page.type, page.title, page.slug, page.showInMenus, page.seoTitle, page.searchDescription, page.parentId, page.listItem, page.detail,
  ]
  if (page.typedListItem !== undefined) line.push(page.typedListItem)
  return line
}

/**
 * The pages a snapshot was built from, as `buildSnapshot` takes them: building them again gives
 * the same fingerprint and the same bytes per page.
 */
export function pagesOfSnapshot(snapshot: Snapshot): SyncedPage[] {
  return snapshot.pages.slice().map((record) => {
    const { digest: _digest, from: _from, ...page } = carryOver(record)
    return { ...page, detail: record.detail.toString('utf8') }
  })
}

/** A live snapshot's bytes, stamped with the configuration it was synced under. */
export function encodeSnapshotOf(snapshot: Snapshot, origin: SnapshotOrigin, options: EncodeOptions = {}): Buffer {
  const { dialect, syncedAt, fullSyncedAt, version, fingerprint } = snapshot
  return encodeSnapshot({ ...origin, dialect, syncedAt, fullSyncedAt, version, fingerprint, pages: pagesOfSnapshot(snapshot) }, options)
}

/**
 * The decoded snapshot, or `undefined` for anything that is not an intact snapshot. Its pages in
 * the form {@link pagesOfSnapshot} gives (the detail as text, no digest), whichever format was
 * read: formats 3 and 4 keep each page's stored digest and a view of its detail bytes.
 */
export function decodeSnapshot(buf: Buffer): DecodedSnapshot | undefined {
  const result = tryDecodeSnapshot(buf)
  return result.ok ? { ...result.decoded, pages: result.decoded.pages.map(plainPage) } : undefined
}

/**
 * A page's fields by name, its detail and `from` aside, `typedListItem` only when it has one. By
 * name, because a stored page's items are accessors, which a spread does not copy.
 */
export function pageFields(page: SyncedPage): Omit<SyncedPage, 'detail' | 'from'> {
  const { id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, listItem, typedListItem, digest } = page
  return {
    id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, listItem,
    ...(typedListItem === undefined ? {} : { typedListItem }), ...(digest === undefined ? {} : { digest }),
  }
}

/** A record's fields by name, its detail aside (see {@link pageFields}). */
export function recordFields(record: PageRecord): Omit<PageRecord, 'detail'> {
  const { order, subtreeEnd, typedListItem, digest } = record
  return { ...pageFields(record), order, subtreeEnd, typedListItem, digest }
}

/** A decoded page as {@link pagesOfSnapshot} gives it. */
export function plainPage(page: SyncedPage): SyncedPage {
  const { digest: _digest, ...fields } = pageFields(page)
  return { ...fields, detail: typeof page.detail === 'string' ? page.detail : page.detail.toString('utf8') }
}

/** A decoded page's detail bytes (made now if deferred); a decoded page never holds text. */
export function detailBytes(page: SyncedPage): Buffer {
  if (typeof page.detail === 'string') throw new TypeError(`page ${page.id} holds its detail as text`)
  return bytesOf(page.detail)
}

/** A stored buffer sealed again with a valid checksum, so that what follows the checksum is what a test exercises. */
export function reseal(buf: Buffer): Buffer {
  const copy = Buffer.from(buf)
  createHash('sha256').update(copy.subarray(0, HASHED_HEADER_BYTES)).update(copy.subarray(HEADER_BYTES)).digest().copy(copy, HASHED_HEADER_BYTES)
  return copy
}

/** Where each part of a stored format-3 or format-4 buffer lies: `[start, end)` offsets into it, in order. */
export function storedParts(buf: Buffer): Array<readonly [number, number]> {
  const metadataBytes = buf.readUInt32BE(9)
  const { parts } = JSON.parse(buf.toString('utf8', HEADER_BYTES, HEADER_BYTES + metadataBytes)) as { parts: [number, number][] }
  let at = HEADER_BYTES + metadataBytes
  return parts.map(([storedLength]) => [at, (at += storedLength)] as const)
}

/**
 * `result` with every page's detail made into its bytes: two decodings compare equal when their
 * pages hold the same bytes, whether a detail was at hand or deferred.
 */
export function withDetailBytes(result: DecodeResult): DecodeResult {
  if (!result.ok) return result
  return { ...result, decoded: { ...result.decoded, pages: result.decoded.pages.map((page) => ({ ...pageFields(page), detail: typeof page.detail === 'string' ? page.detail : bytesOf(page.detail) })) } }
}

/** The rebuilt snapshot, or `undefined` when it cannot be rebuilt to the stored fingerprint. */
export function snapshotFromDecoded(decoded: DecodedSnapshot): Snapshot | undefined {
  const result = rebuildFromDecoded(decoded)
  return result.ok ? result.snapshot : undefined
}
