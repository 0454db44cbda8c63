/**
 * A page's detail body as a snapshot holds it: its bytes, or a {@link DeferredBody} that makes them
 * on first read.
 *
 * Detail bodies are three quarters of a snapshot's bytes, and most of them are never read between
 * two starts. A snapshot loaded from storage keeps them compressed, a group of pages at a time,
 * until one of its pages is asked for (docs/performance.md, "Details decompressed on first read"):
 * a start then decompresses only what it must read to index the tree, and holds the rest at a
 * tenth of the memory.
 * @module
 */
import { parseJsonSpans } from '../json/json-spans.js'
import { selectMembers, type MemberSelection } from '../json/select-members.js'

/** A detail body made on first read. */
export interface DeferredBody {
  /**
   * The body's length in bytes: known without making it for a stored body; a body rewritten for
   * another BASE_URL is made to know it. Read when a snapshot is saved, not when one is loaded or
   * served.
   */
  readonly length: number
  /**
   * The bytes: the same Buffer on every call, so that what is remembered by body (answers, ETags)
   * stays remembered. Throws when they cannot be made; the error says which stored part failed.
   */
  bytes(): Buffer
  /** The body as text, as a Buffer's `toString` gives it (its bytes made first). */
  toString(encoding?: BufferEncoding): string
}

export type DetailBody = Buffer | DeferredBody

/** The bytes of `detail`, made now if it was deferred. */
export function bytesOf(detail: DetailBody): Buffer {
  return Buffer.isBuffer(detail) ? detail : detail.bytes()
}

/** The members of a detail that `?fields=` keeps, laid out as the CMS lays a detail (`select-members.ts`). */
export function selectedDetail(detail: DetailBody, members: MemberSelection): Buffer {
  const text = bytesOf(detail).toString('utf8')
  const root = parseJsonSpans(text)
  if (root.kind !== 'object') throw new TypeError('a detail body is a JSON object')
  return Buffer.from(selectMembers(text, root, members), 'utf8')
}
