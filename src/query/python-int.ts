/**
 * Python's `int(text)` as Wagtail applies it to `limit`, `offset`, `child_of`, `id` … 
 * (docs/wagtail-compatibility.md#integer-parsing): surrounding Unicode whitespace, a sign, underscores between digits
 * and any Unicode decimal digit are accepted. Mimicking it keeps our 400s identical to the CMS's.
 * @module
 */
import { pythonRepr } from './python-repr.js'

/** CPython 3.11+ refuses to convert longer digit strings (sys.int_info.default_max_str_digits). */
const MAX_STR_DIGITS = 4300

export type PythonIntResult = { ok: true; value: bigint } | { ok: false; message: string }

const DECIMAL_DIGIT = /\p{Nd}/u

/** Python's str.isspace() set, the one int() strips. */
export function isPythonSpace(cp: number): boolean {
  return (
    (cp >= 0x09 && cp <= 0x0d) ||
    (cp >= 0x1c && cp <= 0x20) ||
    cp === 0x85 ||
    cp === 0xa0 ||
    cp === 0x1680 ||
    (cp >= 0x2000 && cp <= 0x200a) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    cp === 0x202f ||
    cp === 0x205f ||
    cp === 0x3000
  )
}

/** Value of a Unicode decimal digit: runs of Nd code points are contiguous blocks of ten starting at 0. */
function digitValue(ch: string): number | undefined {
  const cp = ch.codePointAt(0)!
  if (cp >= 0x30 && cp <= 0x39) return cp - 0x30
  if (!DECIMAL_DIGIT.test(ch)) return undefined
  let start = cp
  while (start > 0 && DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--
  return (cp - start) % 10
}

/**
 * Parses like Python's `int(text)` (base 10).
 *
 * @example pythonInt(' +1_0 ') // { ok: true, value: 10n }
 * @example pythonInt('abc') // { ok: false, message: "invalid literal for int() with base 10: 'abc'" }
 */
export function pythonInt(text: string): PythonIntResult {
  const chars = Array.from(text)
  let lo = 0
  let hi = chars.length
  while (lo < hi && isPythonSpace(chars[lo]!.codePointAt(0)!)) lo++
  while (hi > lo && isPythonSpace(chars[hi - 1]!.codePointAt(0)!)) hi--
  const invalid = (): PythonIntResult => ({
    ok: false,
    message: `invalid literal for int() with base 10: ${truncate(pythonRepr(text), 200)}`,
  })
  let i = lo
  let negative = false
  if (i < hi && (chars[i] === '+' || chars[i] === '-')) {
    negative = chars[i] === '-'
    i++
  }
  if (i >= hi) return invalid()
  let digits = ''
  let previousWasDigit = false
  for (; i < hi; i++) {
    const ch = chars[i]!
    if (ch === '_') {
      // An underscore is only allowed between two digits.
      if (!previousWasDigit || i + 1 >= hi || digitValue(chars[i + 1]!) === undefined) return invalid()
      previousWasDigit = false
      continue
    }
    const d = digitValue(ch)
    if (d === undefined) return invalid()
    digits += String(d)
    previousWasDigit = true
  }
  if (digits.length > MAX_STR_DIGITS) {
    return {
      ok: false,
      message:
        `Exceeds the limit (${MAX_STR_DIGITS} digits) for integer string conversion: ` +
        `value has ${digits.length} digits; use sys.set_int_max_str_digits() to increase the limit`,
    }
  }
  const value = BigInt(digits)
  return { ok: true, value: negative ? -value : value }
}

/** Python's `%.200R`: the repr cut to at most `max` code points. */
function truncate(text: string, max: number): string {
  const cps = Array.from(text)
  return cps.length <= max ? text : cps.slice(0, max).join('')
}
