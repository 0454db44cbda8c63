/**
 * The few bits of Python behaviour that leak into Wagtail's answers: `int()` parsing, `repr()` of a
 * string (error texts), and `urllib.parse.quote_plus` (find's redirect query string).
 * @module
 */

/** Characters for which Python's `str.isspace()` is true (what `int()` strips). */
const PY_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
])

export function isPySpace(ch: string): boolean {
  return PY_SPACE.has(ch.codePointAt(0) ?? -1)
}

const DECIMAL_DIGIT = /^\p{Nd}$/u

/** Value of a Unicode decimal digit (`\p{Nd}` comes in contiguous runs of ten, starting at zero). */
function digitValue(ch: string): number | undefined {
  const cp = ch.codePointAt(0) ?? 0
  if (cp >= 0x30 && cp <= 0x39) return cp - 0x30
  if (!DECIMAL_DIGIT.test(ch)) return undefined
  let start = cp
  while (DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--
  return (cp - start) % 10
}

/**
 * Python `int(s)` (base 10): surrounding whitespace, a sign, underscores between digits and any
 * Unicode decimal digits are accepted (docs/wagtail-compatibility.md#integer-parsing, verified: `1_0`, `+2`, ` 2 `).
 * Returns `undefined` where Python raises `ValueError`.
 */
export function parsePyInt(text: string): bigint | undefined {
  const chars = Array.from(text)
  let start = 0
  let end = chars.length
  while (start < end && isPySpace(chars[start] as string)) start++
  while (end > start && isPySpace(chars[end - 1] as string)) end--
  let negative = false
  if (start < end && (chars[start] === '+' || chars[start] === '-')) {
    negative = chars[start] === '-'
    start++
  }
  if (start >= end) return undefined
  let digits = ''
  let previousWasDigit = false
  for (let i = start; i < end; i++) {
    const ch = chars[i] as string
    if (ch === '_') {
      // An underscore must sit between two digits.
      if (!previousWasDigit || i + 1 >= end || chars[i + 1] === '_') return undefined
      previousWasDigit = false
      continue
    }
    const value = digitValue(ch)
    if (value === undefined) return undefined
    digits += String(value)
    previousWasDigit = true
  }
  const magnitude = BigInt(digits)
  return negative ? -magnitude : magnitude
}

/** `bigint` → `number` when it is exactly representable, else `undefined` (such ids exist nowhere). */
export function toSafeNumber(value: bigint): number | undefined {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined
}

const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u

/** Python `repr(str)`, as it appears in `int()`'s and Django's error texts. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'"
  let out = quote
  for (const ch of text) {
    if (ch === '\\' || ch === quote) out += '\\' + ch
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (ch === '\t') out += '\\t'
    else if (ch !== ' ' && NOT_PRINTABLE.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0
      if (cp <= 0xff) out += '\\x' + cp.toString(16).padStart(2, '0')
      else if (cp <= 0xffff) out += '\\u' + cp.toString(16).padStart(4, '0')
      else out += '\\U' + cp.toString(16).padStart(8, '0')
    } else out += ch
  }
  return out + quote
}

/** `urllib.parse.quote_plus(s, safe='')`: only ASCII letters, digits and `_.-~` stay as they are. */
export function quotePlus(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => '%' + (c.codePointAt(0) ?? 0).toString(16).toUpperCase())
    .replace(/%20/g, '+')
}
