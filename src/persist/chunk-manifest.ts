/**
 * A manifest: the list of chunks a stored snapshot is made of, by content, so that a store that
 * keeps chunks by their digest (the Redis target, `cache/redis-snapshot-target.ts`) receives
 * only the chunks it does not hold yet (docs/performance.md, "Whole saves sent by chunk").
 *
 * ```
 * offset  size  field
 *      0     7  magic "CMSCHNK" (not the snapshot's "CMSSHLD": a build that predates manifests
 *               refuses one as "not a cms-shield snapshot" and syncs from the CMS)
 *      7     1  manifest version (u8): MANIFEST_VERSION
 *      8     8  total length of the snapshot (u64, big-endian)
 *     16     4  chunk count N (u32, big-endian)
 *     20  36×N  each chunk in order: its SHA-256 (32 bytes), its length (u32, big-endian)
 * ```
 *
 * The chunks, concatenated in order, are the snapshot's bytes; their lengths add up to the total.
 * Decoding never throws: anything malformed or truncated is refused with a reason.
 * @module
 */

/** One chunk as a manifest lists it: the SHA-256 of its bytes (base64url) and its length. */
export interface ChunkRef {
  readonly digest: string
  readonly length: number
}

export interface ChunkManifest {
  /** Bytes of the snapshot the chunks make up. */
  readonly totalLength: number
  readonly chunks: readonly ChunkRef[]
}

export type ManifestResult = { readonly ok: true; readonly manifest: ChunkManifest } | { readonly ok: false; readonly reason: string }

const MAGIC = Buffer.from('CMSCHNK', 'latin1')
const MANIFEST_VERSION = 1
const HEADER_BYTES = 20
const DIGEST_BYTES = 32
const ENTRY_BYTES = DIGEST_BYTES + 4
const MAX_U32 = 0xffff_ffff

/** Whether `buf` starts like a manifest (it may still be refused when decoded). */
export function isChunkManifest(buf: Buffer): boolean {
  return buf.length >= MAGIC.length && buf.subarray(0, MAGIC.length).equals(MAGIC)
}

/**
 * How many bytes the manifest that `head` begins with takes, read from its header: a store can
 * read a manifest's first bytes, then the rest only when there is more. `undefined` when `head`
 * is not the start of a manifest of this version or is shorter than its header.
 */
export function manifestLength(head: Buffer): number | undefined {
  if (!isChunkManifest(head) || head.length < HEADER_BYTES || head.readUInt8(7) !== MANIFEST_VERSION) return undefined
  return HEADER_BYTES + ENTRY_BYTES * head.readUInt32BE(16)
}

/** The manifest's bytes. Throws a RangeError on a digest that is not a base64url SHA-256 or a length out of range. */
export function encodeManifest(manifest: ChunkManifest): Buffer {
  const { chunks, totalLength } = manifest
  if (chunks.length > MAX_U32 || !Number.isSafeInteger(totalLength) || totalLength < 0) throw new RangeError('a manifest of that size cannot be stored')
  const buf = Buffer.alloc(HEADER_BYTES + ENTRY_BYTES * chunks.length)
  MAGIC.copy(buf, 0)
  buf.writeUInt8(MANIFEST_VERSION, 7)
  buf.writeBigUInt64BE(BigInt(totalLength), 8)
  buf.writeUInt32BE(chunks.length, 16)
  let sum = 0
  for (const [index, chunk] of chunks.entries()) {
    const at = HEADER_BYTES + ENTRY_BYTES * index
    const digest = Buffer.from(chunk.digest, 'base64url')
    if (digest.length !== DIGEST_BYTES || digest.toString('base64url') !== chunk.digest) throw new RangeError(`chunk #${index} has no SHA-256 digest`)
    if (!Number.isSafeInteger(chunk.length) || chunk.length < 0 || chunk.length > MAX_U32) throw new RangeError(`chunk #${index} has a length out of range`)
    digest.copy(buf, at)
    buf.writeUInt32BE(chunk.length, at + DIGEST_BYTES)
    sum += chunk.length
  }
  if (sum !== totalLength) throw new RangeError(`the chunks add up to ${sum} bytes, not ${totalLength}`)
  return buf
}

/** The manifest `buf` holds, or why it is not one. Never throws. */
export function decodeManifest(buf: Buffer): ManifestResult {
  if (!Buffer.isBuffer(buf) || !isChunkManifest(buf)) return { ok: false, reason: 'not a chunk manifest (no CMSCHNK magic)' }
  if (buf.length < HEADER_BYTES) return { ok: false, reason: `truncated chunk manifest (${buf.length} bytes, shorter than its header)` }
  const version = buf.readUInt8(7)
  if (version !== MANIFEST_VERSION) return { ok: false, reason: `chunk manifest version ${version}; this build reads version ${MANIFEST_VERSION}` }
  const total = buf.readBigUInt64BE(8)
  if (total > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false, reason: 'chunk manifest total length out of range' }
  const totalLength = Number(total)
  const count = buf.readUInt32BE(16)
  const expected = HEADER_BYTES + ENTRY_BYTES * count
  if (buf.length !== expected) return { ok: false, reason: `chunk manifest of ${count} chunks is ${buf.length} bytes, not ${expected}` }
  const chunks = new Array<ChunkRef>(count)
  let sum = 0
  for (let index = 0; index < count; index++) {
    const at = HEADER_BYTES + ENTRY_BYTES * index
    const length = buf.readUInt32BE(at + DIGEST_BYTES)
    chunks[index] = { digest: buf.toString('base64url', at, at + DIGEST_BYTES), length }
    sum += length
  }
  if (sum !== totalLength) return { ok: false, reason: `chunk manifest's chunks add up to ${sum} bytes, not ${totalLength}` }
  return { ok: true, manifest: { totalLength, chunks } }
}
