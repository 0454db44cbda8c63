/**
 * The frame around every stored snapshot (a file, a Redis key), whatever its format version:
 *
 * ```
 * offset  size  field
 *      0     7  magic "CMSSHLD"
 *      7     1  format version (u8)
 *      8     1  compression of the pages (u8): 0 = none, 1 = gzip, 2 = brotli (`snapshot-compression.ts`)
 *      9     4  metadata length M (u32, big-endian)
 *     13     4  uncompressed length of the pages (u32, big-endian)
 *     17    32  SHA-256 of bytes 0..17 followed by every byte from offset 49 on
 *     49     M  metadata: one JSON object, uncompressed (`snapshot-metadata.ts`)
 *   49+M     …  pages, compressed
 * ```
 *
 * Formats 3 and 4 add to the metadata `parts`, each part's stored and uncompressed length, and
 * format 4 `groups`, each group's page count and fields length: read and checked here, so that a
 * format's reader gets the parts already cut. Reading a frame never throws: anything malformed,
 * truncated, of another format version or failing its checksum is refused with a reason.
 * @module
 */
import { createHash } from 'node:crypto'
import { compressionCode, type SnapshotCompression } from './snapshot-compression.js'
import { isCount, readMetadata, type StoredMetadata } from './snapshot-metadata.js'
import { describe, refuse, type Refusal } from './refusal.js'

/**
 * The format this build writes. 4: the pages in groups of parts, each compressed on its own, so
 * that a whole save reuses what did not change (docs/performance.md, "Whole saves that reuse").
 * 3 and 2 are still read (`snapshot-legacy-readers.ts`); a version-1 snapshot could not be rebuilt
 * to its own fingerprint (it hashed pages, not per-block digests).
 */
export const SNAPSHOT_FORMAT_VERSION = 4
/** The pages in parts, not grouped (docs/performance.md, "Warm start from Redis"): still read. */
export const PARTS_FORMAT_VERSION = 3
/** Pages as JSON lines, each page's digest and detail computed again on load: still read. */
export const LINES_FORMAT_VERSION = 2

const READ_VERSIONS = [LINES_FORMAT_VERSION, PARTS_FORMAT_VERSION, SNAPSHOT_FORMAT_VERSION]

const MAGIC = Buffer.from('CMSSHLD', 'latin1')
const HASHED_HEADER_BYTES = 17
const HEADER_BYTES = HASHED_HEADER_BYTES + 32
/** Bytes before the metadata: an encoder's first chunk holds them (`snapshot-encoder.ts`). */
export const FRAME_HEADER_BYTES = HEADER_BYTES
const MAX_U32 = 0xffff_ffff

/** Each part's stored and uncompressed length, or each group's page count and fields length. */
export type PartTable = readonly (readonly [number, number])[]

export interface Frame {
  readonly metadata: StoredMetadata
  readonly compression: number
  readonly rawLength: number
  readonly pages: Buffer
  /** Formats 3 and 4: each part's stored and uncompressed length, in order. */
  readonly parts?: PartTable
  /** Format 4: each group's page count and the length of its fields (its head part begins with them). */
  readonly groups?: PartTable
}

/**
 * What {@link readSnapshotMetadata} read of a buffer whose checksum held: decoding it again
 * (`tryDecodeSnapshot`) starts from here and does not hash the whole buffer a second time.
 */
export interface CheckedSnapshot {
  readonly checked: Frame
}
export type MetadataResult = { readonly ok: true; readonly metadata: StoredMetadata; readonly snapshot: CheckedSnapshot } | Refusal

/**
 * The stored snapshot (format {@link SNAPSHOT_FORMAT_VERSION}): header, metadata, then the stored
 * `parts` one after another. The checksum is taken part by part and the buffer assembled in one copy.
 */
export function frame(compression: SnapshotCompression, metadata: Buffer, rawLength: number, parts: readonly Buffer[]): Buffer {
  if (rawLength > MAX_U32 || metadata.length > MAX_U32) throw new RangeError(`a snapshot of ${rawLength} bytes is too large to store`)
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeUInt8(SNAPSHOT_FORMAT_VERSION, 7)
  header.writeUInt8(compressionCode(compression), 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(rawLength, 13)
  const hash = createHash('sha256').update(header.subarray(0, HASHED_HEADER_BYTES)).update(metadata)
  for (const part of parts) hash.update(part)
  hash.digest().copy(header, HASHED_HEADER_BYTES)
  return Buffer.concat([header, metadata, ...parts])
}

/** Checks magic, format version and checksum, and reads the metadata and its part and group tables. */
export function readFrame(buf: Buffer): { ok: true; frame: Frame } | Refusal {
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
function readGroups(value: unknown, parts: PartTable, pageCount: number): [number, number][] | string {
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
