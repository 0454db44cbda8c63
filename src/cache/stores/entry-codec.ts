/**
 * How a `StoredEntry` is laid out in one Redis string, so a `GET` brings back everything in one
 * round trip and a `SET … PX` replaces it atomically:
 *
 * ```
 * 0xC5 | version 1 | storedAt float64 BE | meta length uint32 BE | meta JSON (UTF-8) | value bytes
 * ```
 *
 * Binary rather than JSON so that bodies (most of the bytes) are neither base64-inflated nor
 * copied through a string. Anything that does not decode is not an entry: the store answers a
 * miss rather than replay bytes written by something else or by a future format.
 * @module
 */
import type { EntryMeta, StoredEntry } from './cache-store.js'

const MAGIC = 0xc5
const VERSION = 1
const HEADER_BYTES = 2 + 8 + 4

export function encodeEntry(entry: StoredEntry): Buffer {
  const meta = entry.meta && Object.keys(entry.meta).length > 0 ? Buffer.from(JSON.stringify(entry.meta), 'utf8') : undefined
  const header = Buffer.allocUnsafe(HEADER_BYTES)
  header[0] = MAGIC
  header[1] = VERSION
  header.writeDoubleBE(entry.storedAt, 2)
  header.writeUInt32BE(meta?.length ?? 0, 10)
  return Buffer.concat(meta ? [header, meta, entry.value] : [header, entry.value])
}

/** The entry, or a reason it is not one. `value` shares memory with `bytes`. */
export function decodeEntry(bytes: Buffer): StoredEntry | { readonly invalid: string } {
  if (bytes.length < HEADER_BYTES) return { invalid: `${bytes.length} bytes is shorter than the header` }
  if (bytes[0] !== MAGIC || bytes[1] !== VERSION) return { invalid: `unknown format ${bytes[0]}/${bytes[1]}` }
  const storedAt = bytes.readDoubleBE(2)
  if (!Number.isFinite(storedAt)) return { invalid: 'storedAt is not a finite number' }
  const metaLength = bytes.readUInt32BE(10)
  const valueStart = HEADER_BYTES + metaLength
  if (valueStart > bytes.length) return { invalid: `meta length ${metaLength} runs past the end` }
  const value = bytes.subarray(valueStart)
  if (metaLength === 0) return { value, storedAt }
  const meta = parseMeta(bytes.toString('utf8', HEADER_BYTES, valueStart))
  if (!meta) return { invalid: 'meta is not a JSON object of strings, numbers and booleans' }
  return { value, storedAt, meta }
}

export function isInvalid(decoded: StoredEntry | { readonly invalid: string }): decoded is { readonly invalid: string } {
  return 'invalid' in decoded
}

function parseMeta(text: string): EntryMeta | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  for (const value of Object.values(parsed)) {
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return undefined
  }
  return parsed as EntryMeta
}
