/**
 * Python's `repr(str)`, which appears inside Wagtail's error texts
 * (`invalid literal for int() with base 10: 'abc'`).
 * @module
 */

// str.isprintable() is false for these categories (the ASCII space excepted).
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u

function hex(cp: number, width: number): string {
  return cp.toString(16).padStart(width, '0')
}

/**
 * @example pythonRepr("it's") // "\"it's\""
 * @example pythonRepr('a\u0000') // "'a\\x00'"
 */
export function pythonRepr(text: string): string {
  // Python prefers single quotes, and switches to double quotes only when that avoids escaping.
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'"
  let out = quote
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    if (ch === quote || ch === '\\') out += '\\' + ch
    else if (ch === '\t') out += '\\t'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (cp < 0x20 || cp === 0x7f) out += '\\x' + hex(cp, 2)
    else if (cp < 0x7f || ch === ' ') out += ch
    else if (NON_PRINTABLE.test(ch)) {
      if (cp <= 0xff) out += '\\x' + hex(cp, 2)
      else if (cp <= 0xffff) out += '\\u' + hex(cp, 4)
      else out += '\\U' + hex(cp, 8)
    } else out += ch
  }
  return out + quote
}
