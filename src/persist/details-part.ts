/**
 * Where a stored page's detail body lies: in a details part of the stored snapshot (formats 3 and
 * 4, `snapshot-codec.ts`), which is either at hand or kept compressed until the first of its
 * pages is read (docs/performance.md, "Details decompressed on first read").
 *
 * A deferred part keeps its own copy of its compressed bytes, so the pages never hold the stored
 * buffer, and drops it once decompressed. Its pages' bodies are {@link DeferredBody} handles:
 * carried from snapshot to snapshot like any detail, they make their bytes only when asked.
 * @module
 */
import type { DeferredBody, DetailBody } from '../tree/detail-body.js'

export interface DetailsPart {
  /** Its length uncompressed, in bytes. */
  readonly length: number
  /** The body at `[offset, offset + length)` of the part. */
  body(offset: number, length: number): DetailBody
}

/** A part whose bytes are at hand: each body is a view of them. */
export function presentPart(bytes: Buffer): DetailsPart {
  return { length: bytes.length, body: (offset, length) => bytes.subarray(offset, offset + length) }
}

/** What makes a deferred part's bytes: exactly `length` of them, or the reason it could not. */
export type MakeBytes = () => Buffer | { readonly reason: string }

class DeferredPart implements DetailsPart {
  private made: Buffer | undefined = undefined
  private failure: Error | undefined = undefined
  private make: MakeBytes | undefined

  constructor(readonly length: number, make: MakeBytes, private readonly name: string) {
    this.make = make
  }

  /** The part's bytes, made once; a part that failed keeps failing with the same error. */
  bytes(): Buffer {
    if (this.made !== undefined) return this.made
    if (this.failure !== undefined) throw this.failure
    let result: Buffer | { readonly reason: string }
    try {
      result = this.make!()
    } catch (caught) {
      result = { reason: caught instanceof Error ? caught.message : String(caught) }
    }
    if (Buffer.isBuffer(result) && result.length === this.length) {
      this.made = result
      this.make = undefined
      return result
    }
    const reason = Buffer.isBuffer(result) ? `${result.length} bytes, ${this.length} expected` : result.reason
    this.failure = new Error(`stored snapshot ${this.name} could not be read: ${reason}`)
    this.make = undefined
    throw this.failure
  }

  body(offset: number, length: number): DetailBody {
    return new DeferredSlice(this, offset, length)
  }
}

class DeferredSlice implements DeferredBody {
  private view: Buffer | undefined = undefined

  constructor(private readonly part: DeferredPart, private readonly offset: number, readonly length: number) {}

  bytes(): Buffer {
    return (this.view ??= this.part.bytes().subarray(this.offset, this.offset + this.length))
  }

  toString(encoding?: BufferEncoding): string {
    return this.bytes().toString(encoding)
  }
}

/**
 * A part of `length` bytes made by `make` when the first of its bodies is read. `name` says
 * which part it is in the error a failure throws to every reader of its pages.
 */
export function deferredPart(length: number, make: MakeBytes, name: string): DetailsPart {
  return new DeferredPart(length, make, name)
}
