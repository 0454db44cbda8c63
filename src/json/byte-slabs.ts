/**
 * Many small byte copies packed into a few large buffers.
 *
 * A snapshot keeps one detail body per page, about 2 KB each. Each in a buffer of its own (see
 * `ownBytes`), 100,000 of them cost far more than their bytes: an ArrayBuffer object on the V8
 * heap, a backing store and its bookkeeping in C++, and a malloc chunk each, interleaved with the
 * sync's short-lived allocations (docs/performance.md, "Memory at 100,000 pages"). Copied into
 * slabs here, a batch of details costs its bytes plus one view per page.
 *
 * The price is that a slab lives as long as any page in it. A sync that fetches many details at
 * once (a full sync) packs them; a page replaced later leaves its old bytes in the slab until the
 * next full sync replaces every page. Small batches are not worth a slab and copy one by one.
 * @module
 */
import { ownBytes } from './own-string.js'

/** Bytes per slab: a few hundred details. */
export const SLAB_BYTES = 256 * 1024

/** A copy longer than this gets a buffer of its own, so that a slab's unused tail stays small. */
const LARGEST_PACKED = SLAB_BYTES / 16

/** Batches this large are packed: at ~2 KB a page, a few slabs' worth. */
const PACK_FROM = 512

export class ByteSlabs {
  private slab: Buffer | undefined
  private used = 0

  /** The UTF-8 bytes of `text`, in the current slab when they fit. */
  copy(text: string): Buffer {
    const length = Buffer.byteLength(text, 'utf8')
    if (length > LARGEST_PACKED) return ownBytes(text)
    const bytes = this.take(length)
    bytes.write(text, 0, 'utf8')
    return bytes
  }

  /** `length` bytes to fill (not zeroed), in the current slab when they fit. */
  take(length: number): Buffer {
    if (length > LARGEST_PACKED) return Buffer.allocUnsafeSlow(length)
    if (this.slab === undefined || this.used + length > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
      this.used = 0
    }
    const start = this.used
    this.used += length
    return this.slab.subarray(start, this.used)
  }
}

/**
 * How a batch of `count` copies is made: packed when there are enough of them to fill slabs, one
 * buffer each otherwise (a PURGE's single page must not hold a whole slab).
 */
export function bytesCopier(count: number): (text: string) => Buffer {
  if (count < PACK_FROM) return ownBytes
  const slabs = new ByteSlabs()
  return (text) => slabs.copy(text)
}

/** Like {@link bytesCopier}, for bytes written in place: `length` bytes to fill, packed or each in a buffer of its own. */
export function bytesTaker(count: number): (length: number) => Buffer {
  if (count < PACK_FROM) return (length) => Buffer.allocUnsafeSlow(length)
  const slabs = new ByteSlabs()
  return (length) => slabs.take(length)
}
