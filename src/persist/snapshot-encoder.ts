/**
 * Encodes a live snapshot in the stored format (format 4, `snapshot-codec.ts`), reusing what the
 * previous encoding compressed.
 *
 * The pages are cut into groups by content (`snapshot-groups.ts`) and each group is stored as two
 * compressed parts. A group is known by a key that is exact for its stored bytes: the SHA-256 of
 * its fields rows, which hold every field a page stores, the lengths of its texts and detail and
 * its digest, which covers those texts and that detail (`pageDigest` in `tree/build-snapshot.ts`).
 * The encoder keeps the stored parts of its previous encoding by key, and a group whose key it
 * already holds is not built nor compressed again: a whole save after a one-page edit compresses
 * one group or two, not the whole snapshot (docs/performance.md, "Whole saves that reuse").
 *
 * The output depends only on the snapshot, the origin and the compression: an encoder with
 * nothing kept gives the same bytes. Only the previous encoding's groups are kept (about the
 * stored size), and none for `compression: 'none'`, whose parts are the raw bytes themselves.
 *
 * A page's digest is trusted to cover its bytes, as the stored format and the fingerprint already
 * trust it. A snapshot loaded under another BASE_URL keeps the stored digests of bodies it
 * rewrote (`rebase-snapshot.ts`); an encoder belongs to one persistence, hence one BASE_URL, and
 * rewrites the same stored bodies the same way, so its keys stay exact.
 * @module
 */
import { createHash } from 'node:crypto'
import { bytesOf } from '../tree/detail-body.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import { compressPart, type EncodeOptions, type SnapshotCompression } from './snapshot-compression.js'
import { frame, FRAME_HEADER_BYTES } from './snapshot-framing.js'
import { metadataFields, metadataOf, type SnapshotOrigin } from './snapshot-metadata.js'
import { endsGroup, GROUP_RULE, groupEnds, type GroupRule } from './snapshot-groups.js'

/** A range of an encoding's bytes, known by the SHA-256 of those bytes (base64url). */
export interface SnapshotChunk {
  readonly offset: number
  readonly length: number
  readonly digest: string
}

/** One encoding, and how much of it came from the previous one. */
export interface EncodedSnapshot {
  readonly buf: Buffer
  /**
   * `buf` cut into chunks, in order and without gaps: the header and the metadata's first fields
   * (new at each save), the metadata's part and group tables in pieces of about 32 groups, then
   * one chunk per group of pages (its head and details parts, which lie next to each other). A
   * store that keeps chunks by digest receives only the new ones (`cache/redis-snapshot-target.ts`,
   * docs/performance.md, "Whole saves sent by chunk"). None for `compression: 'none'`, whose
   * groups are not kept: its buffer is written whole.
   */
  readonly chunks?: readonly SnapshotChunk[]
  /** Groups of pages stored. */
  readonly groups: number
  /** Of those, groups whose stored parts were kept from the previous encoding (not compressed again). */
  readonly reused: number
}

export interface SnapshotEncoder {
  /** Encodes `snapshot` as made under `origin`; the event loop runs between slices of pages. */
  encode(snapshot: Snapshot, origin: SnapshotOrigin, options?: EncodeOptions): Promise<EncodedSnapshot>
  /** Drops what the previous encoding kept (about the stored size): the next encoding is whole. */
  forget(): void
}

export interface SnapshotEncoderOptions {
  /** Where groups end; tests pass small ones. Default {@link GROUP_RULE}. */
  readonly groupRule?: GroupRule
}

/** One group as stored: its two parts, compressed, with their uncompressed lengths. */
interface StoredGroup {
  readonly pages: number
  readonly fieldsBytes: number
  readonly head: Buffer
  readonly headRaw: number
  readonly details: Buffer
  readonly detailsRaw: number
  /** SHA-256 of `head` then `details` (base64url): the group's chunk, hashed once when compressed. */
  readonly digest: string
}

/** The encoder lets requests run after about this many pages gathered. */
const YIELD_EVERY_PAGES = 1024
/**
 * Parts compressed at once on libuv's thread pool: gathering the next group overlaps compressing
 * the last, and a whole save never takes more than two of the pool's threads from a start's
 * decompression or from DNS and file work.
 */
const PARALLEL_COMPRESSIONS = 2

/**
 * The metadata's part and group tables are cut after a group whose key hits 1 in this many: a
 * one-page edit changes one group's entries, so a store that keeps chunks receives a piece of
 * a few dozen groups' entries again, not the whole tables, while each piece costs the manifest
 * one entry (`chunk-manifest.ts`). The cuts depend on the groups' keys, not
 * on their positions, so an inserted group moves no other cut.
 */
const METADATA_ONE_IN = 32

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * One page's fields row (formats 3 and 4): its fields, its digest and the byte lengths of its
 * texts and detail.
 */
function fieldsRow(record: PageRecord): string {
  const typed = record.typedListItem
  return JSON.stringify([
    record.id, record.type, record.title, record.slug, record.showInMenus, record.seoTitle, record.searchDescription, record.parentId,
    record.digest, Buffer.byteLength(record.listItem, 'utf8'), typed === undefined ? -1 : Buffer.byteLength(typed, 'utf8'), record.detail.length,
  ])
}

/** The head part of a group: its fields, then each page's listing texts. */
function headOf(fields: string, records: readonly PageRecord[]): Buffer {
  const chunks: Buffer[] = [Buffer.from(fields, 'utf8')]
  for (const record of records) {
    chunks.push(Buffer.from(record.listItem, 'utf8'))
    if (record.typedListItem !== undefined) chunks.push(Buffer.from(record.typedListItem, 'utf8'))
  }
  return Buffer.concat(chunks)
}

/** What an encoder keeps of its previous encoding. */
interface Kept {
  readonly compression: SnapshotCompression
  /** Each group by the SHA-256 of its fields. */
  readonly byFields: ReadonlyMap<string, { readonly key: string; readonly group: StoredGroup }>
  /** The same groups by the records they were made of ({@link createSnapshotEncoder}'s `recordsKey`). */
  readonly byRecords: ReadonlyMap<string, { readonly key: string; readonly group: StoredGroup }>
}

export function createSnapshotEncoder(options: SnapshotEncoderOptions = {}): SnapshotEncoder {
  const rule = options.groupRule ?? GROUP_RULE
  // A number for each record this encoder has seen. Records are immutable, and an unchanged page
  // is carried into the next snapshot as the same record (`recordOf` in `tree/build-snapshot.ts`):
  // a group of the same records as a kept one is that group, found without making its rows or
  // hashing them (which a large tree pays for dearly). A page that moved in the tree order (after an
  // insert before it) is a new record with the same row, and is found by its fields' key.
  const numbers = new WeakMap<PageRecord, number>()
  let counted = 0
  const numberOf = (record: PageRecord): number => {
    let number = numbers.get(record)
    if (number === undefined) numbers.set(record, (number = counted++))
    return number
  }
  let kept: Kept | undefined

  return {
    async encode(snapshot, origin, encodeOptions = {}) {
      const compression = encodeOptions.compression ?? 'brotli'
      const previous = kept?.compression === compression ? kept : undefined
      // One copy per whole save (seldom: patches go between them), so the groups slice a plain array.
      const records = snapshot.pages.slice()
      const ends = groupEnds(records, rule)
      const stored = new Array<StoredGroup>(ends.length)
      const keys = new Array<string>(ends.length)
      const recordsKeys = new Array<string>(ends.length)
      let reused = 0
      const running = new Set<Promise<void>>()
      let failure: { readonly caught: unknown } | undefined
      let start = 0
      let sinceYield = 0
      for (const [index, end] of ends.entries()) {
        const group = records.slice(start, end)
        const recordsKey = group.map(numberOf).join(',')
        recordsKeys[index] = recordsKey
        const known = previous?.byRecords.get(recordsKey)
        const fields = known === undefined ? `[${group.map(fieldsRow).join(',')}]` : ''
        const key = known?.key ?? createHash('sha256').update(fields).digest('base64url')
        keys[index] = key
        const same = known ?? previous?.byFields.get(key)
        if (same !== undefined) {
          stored[index] = same.group
          reused++
        } else {
          const head = headOf(fields, group)
          const details = Buffer.concat(group.map((record) => bytesOf(record.detail)))
          const fieldsBytes = Buffer.byteLength(fields, 'utf8')
          // Handled at once: a failure is reported after the loop, never as an unhandled rejection.
          const task: Promise<void> = Promise.all([compressPart(compression, head), compressPart(compression, details)])
            .then(([storedHead, storedDetails]) => {
              // Uncompressed parts are not kept, and their group is no chunk: no need to hash them.
              const digest = compression === 'none' ? '' : createHash('sha256').update(storedHead).update(storedDetails).digest('base64url')
              stored[index] = { pages: group.length, fieldsBytes, head: storedHead, headRaw: head.length, details: storedDetails, detailsRaw: details.length, digest }
            })
            .catch((caught: unknown) => void (failure ??= { caught }))
            .finally(() => running.delete(task))
          running.add(task)
          while (running.size >= PARALLEL_COMPRESSIONS) await Promise.race(running)
        }
        sinceYield += group.length
        if (sinceYield >= YIELD_EVERY_PAGES) {
          sinceYield = 0
          await yieldToEventLoop()
        }
        start = end
      }
      await Promise.all(running)
      if (failure !== undefined) throw failure.caught
      kept = compression === 'none' ? undefined : {
        compression,
        byFields: new Map(keys.map((key, index) => [key, { key, group: stored[index]! }])),
        byRecords: new Map(recordsKeys.map((recordsKey, index) => [recordsKey, { key: keys[index]!, group: stored[index]! }])),
      }
      const parts: Buffer[] = []
      let rawLength = 0
      for (const group of stored) {
        parts.push(group.head, group.details)
        rawLength += group.headRaw + group.detailsRaw
      }
      const pieces = metadataPieces(snapshot, origin, stored, keys)
      const buf = frame(compression, Buffer.from(pieces.join(''), 'utf8'), rawLength, parts)
      const encoded = { buf, groups: stored.length, reused }
      return compression === 'none' ? encoded : { ...encoded, chunks: chunksOf(buf, pieces, stored) }
    },

    forget() {
      kept = undefined
    },
  }
}

/**
 * The metadata as stored (the fields, the page count, the part and group tables: what
 * `JSON.stringify` would give), in pieces: the fields, then the tables cut after the groups whose
 * key hits {@link METADATA_ONE_IN}.
 */
function metadataPieces(snapshot: Snapshot, origin: SnapshotOrigin, stored: readonly StoredGroup[], keys: readonly string[]): string[] {
  const fields = JSON.stringify({ ...metadataFields(metadataOf(snapshot, origin)), pageCount: snapshot.pages.length })
  const pieces = [`${fields.slice(0, -1)},"parts":[`]
  const cuts = keys.map((key) => endsGroup(key, METADATA_ONE_IN))
  const table = (entry: (group: StoredGroup) => string, close: string) => {
    let piece = ''
    for (const [index, group] of stored.entries()) {
      piece += `${index > 0 ? ',' : ''}${entry(group)}`
      if (cuts[index]) {
        pieces.push(piece)
        piece = ''
      }
    }
    pieces.push(piece + close)
  }
  table((group) => `[${group.head.length},${group.headRaw}],[${group.details.length},${group.detailsRaw}]`, '],"groups":[')
  table((group) => `[${group.pages},${group.fieldsBytes}]`, ']}')
  return pieces
}

/** The chunks of a framed encoding: the header with the first metadata piece, each further piece, each group. */
function chunksOf(buf: Buffer, pieces: readonly string[], stored: readonly StoredGroup[]): SnapshotChunk[] {
  const chunks: SnapshotChunk[] = []
  const hashed = (offset: number, length: number) => {
    chunks.push({ offset, length, digest: createHash('sha256').update(buf.subarray(offset, offset + length)).digest('base64url') })
    return offset + length
  }
  let at = 0
  for (const [index, piece] of pieces.entries()) {
    const length = Buffer.byteLength(piece, 'utf8') + (index === 0 ? FRAME_HEADER_BYTES : 0)
    if (length > 0) at = hashed(at, length)
  }
  for (const group of stored) {
    const length = group.head.length + group.details.length
    chunks.push({ offset: at, length, digest: group.digest })
    at += length
  }
  return chunks
}

/** Encodes a live snapshot with an encoder of its own (nothing reused): tests and tools. */
export async function encodeSnapshotOfAsync(snapshot: Snapshot, origin: SnapshotOrigin, options: EncodeOptions = {}): Promise<Buffer> {
  return (await createSnapshotEncoder().encode(snapshot, origin, options)).buf
}
