/**
 * Wagtail's `?fields=` parser (`utils.parse_fields_parameter`), step for step, so that every error
 * text and position matches (docs/wagtail-compatibility.md#error-texts): a list of
 * `(name, negated, sub-fields)`, sub-fields for `name(a,b)`. Positions count code points, as
 * Python's do. Pure.
 * @module
 */
import { isPythonSpace } from './python-int.js'

export interface FieldSpec {
  readonly name: string
  readonly negated: boolean
  /** `name(…)`'s fields; `null` without brackets. */
  readonly sub: readonly FieldSpec[] | null
}

export type ParsedFields = { readonly ok: true; readonly fields: readonly FieldSpec[] } | { readonly ok: false; readonly message: string }

class ParseError extends Error {}

/** Python's `str.isalnum()`: letters and numbers of every script. */
const ALPHANUMERIC = /^[\p{L}\p{N}]$/u

export function parseFieldsParameter(input: string): ParsedFields {
  const chars = Array.from(input)
  try {
    return { ok: true, fields: parseFields(chars, 0, false).fields }
  } catch (error) {
    if (error instanceof ParseError) return { ok: false, message: error.message }
    throw error
  }
}

const unexpected = (chars: readonly string[], at: number): ParseError => new ParseError(`unexpected char '${chars[at]!}' at position ${at}`)

/** One name, with its `-`: stops before `(`, `)` or `,`. */
function parseIdentifier(chars: readonly string[], start: number): { name: string; negated: boolean; at: number } {
  let name = ''
  let negated = false
  let at = start
  for (; at < chars.length; at++) {
    const char = chars[at]!
    if (char === '(' || char === ')' || char === ',') {
      // `*` and `_` take no sub-fields.
      if (name === '' || ((name === '*' || name === '_') && char === '(')) throw unexpected(chars, at)
      return { name, negated, at }
    }
    if (char === '-') {
      if (at !== start) throw unexpected(chars, at)
      negated = true
    } else if (char === '*' || char === '_') {
      if (name !== '' && char === '*') throw unexpected(chars, at)
      name += char
    } else if (ALPHANUMERIC.test(char)) {
      if (name === '*') throw unexpected(chars, at)
      name += char
    } else if (isPythonSpace(char.codePointAt(0)!)) {
      throw new ParseError(`unexpected whitespace at position ${at}`)
    } else {
      throw unexpected(chars, at)
    }
  }
  return { name, negated, at }
}

function parseFields(chars: readonly string[], start: number, inBrackets: boolean): { fields: FieldSpec[]; at: number } {
  const fields: FieldSpec[] = []
  let at = start
  while (at < chars.length) {
    const parsed = parseIdentifier(chars, at)
    const { name, negated } = parsed
    at = parsed.at
    const first = fields.length === 0
    if (name === '*' || name === '_') {
      if (!first) throw new ParseError(`'${name}' must be in the first position`)
      if (negated) throw new ParseError(`'${name}' cannot be negated`)
    }
    let sub: FieldSpec[] | null = null
    if (chars[at] === '(') {
      if (negated) throw new ParseError(`unexpected char '(' at position ${at}`)
      const nested = parseFields(chars, at + 1, true)
      sub = nested.fields
      at = nested.at
    }
    if (!first) {
      const head = fields[0]!.name
      if (head === '_' && negated) throw new ParseError("negated fields with '_' doesn't make sense")
      if (head === '*' && !negated && (sub === null || sub.length === 0)) throw new ParseError("additional fields with '*' doesn't make sense")
    }
    fields.push({ name, negated, sub })
    if (chars[at] === ')') {
      if (!inBrackets) throw new ParseError(`unexpected char ')' at position ${at}`)
      return { fields, at: at + 1 }
    }
    if (chars[at] === ',') {
      at++
      if (at >= chars.length || chars[at] === ',') throw new ParseError(`unexpected char ',' at position ${at}`)
    }
  }
  if (inBrackets) throw new ParseError('unexpected end of input (did you miss out a close bracket?)')
  return { fields, at }
}
