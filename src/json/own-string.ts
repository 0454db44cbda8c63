/**
 * A copy of a string that owns its characters.
 *
 * Strings cut out of a large body (`text.slice`, a JSON span's value) are V8 "sliced strings"
 * that keep the whole body alive. A snapshot keeps its pages for as long as it serves, so what
 * it keeps must not pin the sync's response bodies. Short strings are copied by V8 anyway.
 * @module
 */

/** V8 makes a slice shorter than this (`SlicedString::kMinLength`) a fresh copy already. */
const MIN_SLICED_LENGTH = 13

export function ownString(text: string): string {
  return text.length < MIN_SLICED_LENGTH ? text : Buffer.from(text, 'utf8').toString('utf8')
}

/**
 * The UTF-8 bytes of `text` in a buffer of their own. `Buffer.from` would cut small ones out of
 * Node's shared 8 KiB pool, and one kept page would then pin a whole pool slab after its
 * neighbours are gone: over a long run, a third or more of the memory holding details.
 */
export function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'))
  bytes.write(text, 'utf8')
  return bytes
}
