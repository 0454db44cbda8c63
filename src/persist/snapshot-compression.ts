/**
 * How a stored snapshot's parts are compressed: each part on its own, by the method its header
 * names (byte 8, `snapshot-framing.ts`): 0 = none, 1 = gzip, 2 = brotli. Compression 0 stores the
 * parts as they are.
 * @module
 */
import { constants as bufferConstants } from 'node:buffer'
import { promisify } from 'node:util'
import {
  brotliCompress, brotliDecompress, brotliDecompressSync, constants as zlib, gunzip, gunzipSync, gzip, type BrotliOptions, type ZlibOptions,
} from 'node:zlib'
import { refuse, type Refusal } from './refusal.js'

export const NONE = 0
export const GZIP = 1
export const BROTLI = 2

export type SnapshotCompression = 'none' | 'gzip' | 'brotli'

export interface EncodeOptions {
  /**
   * Default `brotli` at quality 4: smaller than gzip at level 6 for about the same encoding time
   * on prose-like text (slower on near-random text). `none` stores the parts as they are: many
   * times larger, and reading that from Redis took longer than decompressing
   * (docs/performance.md, "Warm start from Redis").
   */
  readonly compression?: SnapshotCompression
}

/** The header's byte for `compression`. */
export function compressionCode(compression: SnapshotCompression): number {
  return compression === 'gzip' ? GZIP : compression === 'none' ? NONE : BROTLI
}

const BROTLI_QUALITY = 4
const GZIP_LEVEL = 6

const brotliOptions: BrotliOptions = {
  params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT },
}

const gzipOptions: ZlibOptions = { level: GZIP_LEVEL }

const brotliCompressAsync = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

/** One part as stored, compressed on libuv's thread pool (`none`: the part itself). */
export function compressPart(compression: SnapshotCompression, raw: Buffer): Promise<Buffer> {
  if (compression === 'none') return Promise.resolve(raw)
  return compression === 'gzip' ? gzipAsync(raw, gzipOptions) : brotliCompressAsync(raw, brotliOptions)
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
export function inflate(compression: number, stored: Buffer, rawLength: number): Buffer | Refusal {
  if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
  const limits = inflateLimits(rawLength)
  let raw: Buffer
  if (compression === GZIP) raw = gunzipSync(stored, limits)
  else if (compression === BROTLI) raw = brotliDecompressSync(stored, limits)
  else if (compression === NONE) raw = stored
  else return refuse(`unknown snapshot compression ${compression}`)
  return inflated(raw, stored, rawLength)
}

const brotliDecompressAsync = promisify(brotliDecompress)
const gunzipAsync = promisify(gunzip)

/** {@link inflate} on libuv's thread pool. */
export async function inflateAsync(compression: number, stored: Buffer, rawLength: number): Promise<Buffer | Refusal> {
  if (compression !== GZIP && compression !== BROTLI) return inflate(compression, stored, rawLength)
  if (rawLength > bufferConstants.MAX_LENGTH) return refuse(`snapshot pages of ${rawLength} bytes are too large`)
  const limits = inflateLimits(rawLength)
  const raw = compression === GZIP ? await gunzipAsync(stored, limits) : await brotliDecompressAsync(stored, limits)
  return inflated(raw, stored, rawLength)
}

/** The uncompressed part checked against the length its table gives, in a buffer of its own. */
function inflated(raw: Buffer, stored: Buffer, rawLength: number): Buffer | Refusal {
  if (raw.length !== rawLength) return refuse(`snapshot pages are ${raw.length} bytes, the header says ${rawLength}`)
  // Node 24 hands a sync result under 64 KiB out as a view into a slab shared with other results
  // (Node 22 only under 4 KiB, from its 8 KiB pool), whatever the chunk size: the details kept as
  // views of one part would hold the others' bytes too, so such a part gets a buffer of its own.
  if (raw !== stored && raw.buffer.byteLength !== raw.length) return ownCopy(raw)
  return raw
}

/** A copy in a buffer of its own (`Buffer.from` would put a small one in the shared pool). */
export function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length)
  bytes.copy(copy)
  return copy
}
