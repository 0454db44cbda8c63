/**
 * `rewrite-detail-urls.ts` for a body parsed on a {@link JsonTape}: the same `meta.detail_url`
 * strings are found (string values directly under a key `meta`, at any depth) and replaced, and
 * the new body is written as bytes, every other byte copied as the CMS sent it.
 * @module
 */
import { jsonString } from './json-text.js'
import { TAPE_ARRAY, TAPE_OBJECT, type JsonTape } from './json-tape.js'
import type { RewriteUrl } from './rewrite-detail-urls.js'

/** One `detail_url` string token (byte offsets `start`, `end`) and the UTF-8 bytes of its replacement token. */
export interface ByteEdit {
  readonly start: number
  readonly end: number
  readonly replacement: Buffer
}

/** The edits (in document order) for the `meta.detail_url`s of value `root` that `rewriteUrl` changes. */
export function findTapeDetailUrlEdits(tape: JsonTape, rewriteUrl: RewriteUrl, root = 0): ByteEdit[] {
  const edits: ByteEdit[] = []
  // Recursion depth is bounded by the tape's maxDepth.
  const visit = (i: number, isMeta: boolean): void => {
    const kind = tape.kind(i)
    const end = tape.next(i)
    if (kind === TAPE_ARRAY) {
      for (let k = i + 1; k < end; k = tape.next(k)) visit(k, false)
    } else if (kind === TAPE_OBJECT) {
      for (let k = i + 1; k < end; k = tape.next(k + 1)) {
        const value = k + 1
        if (isMeta && tape.isString(value) && tape.keyIs(k, 'detail_url')) {
          const old = tape.stringValue(value)
          const url = rewriteUrl(old)
          // An unchanged URL keeps its original token, whatever escaping the CMS used.
          if (url !== undefined && url !== old) {
            edits.push({ start: tape.start(value), end: tape.end(value), replacement: Buffer.from(jsonString(url), 'utf8') })
          }
        } else {
          const kindOfValue = tape.kind(value)
          if (kindOfValue === TAPE_OBJECT || kindOfValue === TAPE_ARRAY) visit(value, kindOfValue === TAPE_OBJECT && tape.keyIs(k, 'meta'))
        }
      }
    }
  }
  visit(root, false)
  return edits
}

/** The length of `bytes[from, to)` once `edits` (document order, inside the range) are applied. */
export function editedLength(from: number, to: number, edits: readonly ByteEdit[]): number {
  let length = to - from
  for (const edit of edits) length += edit.replacement.length - (edit.end - edit.start)
  return length
}

/**
 * Writes `bytes[from, to)` with `edits` applied into `target` at `at`; returns the offset after
 * the last byte written. `target` must have room for {@link editedLength}.
 */
export function writeEdited(bytes: Buffer, from: number, to: number, edits: readonly ByteEdit[], target: Buffer, at = 0): number {
  let cursor = from
  for (const edit of edits) {
    at += bytes.copy(target, at, cursor, edit.start)
    at += edit.replacement.copy(target, at)
    cursor = edit.end
  }
  return at + bytes.copy(target, at, cursor, to)
}
