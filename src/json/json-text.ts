/**
 * Text-level JSON helpers: splice replacements into upstream bytes, and encode the few values the
 * proxy writes itself exactly the way Wagtail (Django REST framework) would.
 *
 * DRF renders with `ensure_ascii=False` (non-ASCII stays raw) and then escapes U+2028/U+2029 so the
 * body is also valid JavaScript; with `indent=4` Python's separators are `,` / `: `, which is exactly
 * `JSON.stringify(v, null, 4)`. Python and V8 also agree on string escapes (`\n`, `\"`, `\u001f`…,
 * lower-case hex). They differ on some floats (`1e-07` vs `1e-7`), so never render upstream numbers.
 * @module
 */

/** Replace `text.slice(start, end)` with `replacement`. Offsets are UTF-16 indexes. */
export interface TextEdit {
  readonly start: number
  readonly end: number
  readonly replacement: string
}

/**
 * Applies non-overlapping edits in one pass. Edits may come in any order; touching edits
 * (`a.end === b.start`) are fine, and two insertions at the same offset keep their given order.
 * Throws `RangeError` on overlap or out-of-range offsets rather than producing corrupt JSON.
 */
export function spliceText(text: string, edits: readonly TextEdit[]): string {
  if (edits.length === 0) return text
  let sorted = edits
  for (let i = 1; i < edits.length; i++) {
    // Only pay for a sort when the caller did not already produce document order.
    if ((edits[i] as TextEdit).start < (edits[i - 1] as TextEdit).start) {
      sorted = [...edits].sort((a, b) => a.start - b.start)
      break
    }
  }
  const parts: string[] = []
  let cursor = 0
  for (const edit of sorted) {
    const { start, end } = edit
    if (!(Number.isInteger(start) && Number.isInteger(end) && start <= end && end <= text.length)) {
      throw new RangeError(`Edit [${start}, ${end}) is outside the text (length ${text.length})`)
    }
    if (start < cursor) throw new RangeError(`Edit [${start}, ${end}) overlaps an earlier edit ending at ${cursor}`)
    parts.push(text.slice(cursor, start), edit.replacement)
    cursor = end
  }
  parts.push(text.slice(cursor))
  return parts.join('')
}

const LINE_SEPARATORS = /[\u2028\u2029]/g

function escapeLineSeparators(json: string): string {
  return json.replace(LINE_SEPARATORS, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'))
}

/** A JSON string token for `value`, encoded as Wagtail/DRF would write it. */
export function jsonString(value: string): string {
  return escapeLineSeparators(JSON.stringify(value))
}

/**
 * A whole body in Wagtail's format (4-space indent), for bodies the proxy writes itself, such as
 * `{"message": "..."}` errors. Not for upstream data: see the module note on numbers.
 */
export function renderWagtailJson(value: unknown): string {
  const json = JSON.stringify(value, null, 4) as string | undefined
  if (json === undefined) throw new TypeError('Value has no JSON representation')
  return escapeLineSeparators(json)
}
