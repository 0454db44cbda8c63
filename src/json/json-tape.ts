/**
 * A strict RFC 8259 parser over a body's bytes that records where every token sits, in flat typed
 * arrays (a "tape"), and decodes nothing until asked.
 *
 * The sync reads a few fields and rewrites a few URLs of every body the CMS sends, and keeps the
 * rest byte for byte. `json-spans.ts` parses a JS string into one object per value; for a sync of
 * a whole tree that meant decoding each body into a string, a node and a string per value, and
 * encoding the result back into bytes. Here a body is parsed where it lies: one pass, no object
 * per value, offsets in bytes, strings decoded only for the fields read. One `JsonTape` is reused
 * from body to body: what it holds is valid until its next `parse`.
 *
 * Layout: tokens in document order. An object is its token, then for each member a key token
 * (a string) followed by the value's tokens; an array is its token, then each item's tokens.
 * `next(i)` is the token after value `i` and everything inside it, so siblings are one step apart.
 * Accepts exactly what `parseJsonSpans` (and `JSON.parse`) accept; bytes inside strings are not
 * checked as UTF-8, which only decoding a string (as `Buffer#toString` does) would need.
 * @module
 */
import { DEFAULT_MAX_DEPTH, JsonSyntaxError } from './json-spans.js'

export const TAPE_OBJECT = 1
export const TAPE_ARRAY = 2
/** A string without escapes: its value is the bytes between its quotes. */
export const TAPE_STRING = 3
/** A string with at least one escape. */
export const TAPE_ESCAPED = 4
export const TAPE_NUMBER = 5
export const TAPE_TRUE = 6
export const TAPE_FALSE = 7
export const TAPE_NULL = 8

const TAB = 9
const LF = 10
const CR = 13
const SPACE = 32
const QUOTE = 34
const PLUS = 43
const COMMA = 44
const MINUS = 45
const DOT = 46
const SLASH = 47
const ZERO = 48
const NINE = 57
const COLON = 58
const UPPER_E = 69
const LBRACKET = 91
const BACKSLASH = 92
const RBRACKET = 93
const LOWER_E = 101
const LBRACE = 123
const RBRACE = 125

/** Escapes that stand for one character (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`); `\u` is checked apart. */
const SIMPLE_ESCAPE = new Uint8Array(128)
for (const c of [QUOTE, BACKSLASH, SLASH, 98, 102, 110, 114, 116]) SIMPLE_ESCAPE[c] = 1

/** 1 for a byte that a string holds as it is: not a quote, a backslash or a control character. */
const STRING_PLAIN = new Uint8Array(256).fill(1)
for (let c = 0; c < SPACE; c++) STRING_PLAIN[c] = 0
STRING_PLAIN[QUOTE] = 0
STRING_PLAIN[BACKSLASH] = 0

function isHex(c: number): boolean {
  return (c >= ZERO && c <= NINE) || ((c | 0x20) >= 97 && (c | 0x20) <= 102)
}

const INITIAL_TOKENS = 256

export class JsonTape {
  /** The bytes last parsed. */
  bytes: Buffer = Buffer.alloc(0)
  /** How many tokens the last parse recorded; token 0 is the root. */
  count = 0
  private kinds = new Uint8Array(INITIAL_TOKENS)
  private starts = new Int32Array(INITIAL_TOKENS)
  private ends = new Int32Array(INITIAL_TOKENS)
  private nexts = new Int32Array(INITIAL_TOKENS)
  private stack = new Int32Array(64)

  constructor(private readonly maxDepth = DEFAULT_MAX_DEPTH) {}

  kind(i: number): number {
    return this.kinds[i] as number
  }

  /** Byte offset where token `i` starts (a string's opening quote). */
  start(i: number): number {
    return this.starts[i] as number
  }

  /** Byte offset just past value `i` (a container's closing bracket included). */
  end(i: number): number {
    return this.ends[i] as number
  }

  /** The token after value `i` and everything nested in it. */
  next(i: number): number {
    return this.nexts[i] as number
  }

  isString(i: number): boolean {
    const kind = this.kinds[i]
    return kind === TAPE_STRING || kind === TAPE_ESCAPED
  }

  /** The decoded value of string token `i`, as `JSON.parse` gives it. */
  stringValue(i: number): string {
    const start = this.starts[i] as number
    const end = this.ends[i] as number
    if (this.kinds[i] === TAPE_STRING) return this.bytes.toString('utf8', start + 1, end - 1)
    return JSON.parse(this.bytes.toString('utf8', start, end)) as string
  }

  /** The source text of token `i` (a number's exact digits, say). */
  raw(i: number): string {
    return this.bytes.toString('utf8', this.starts[i] as number, this.ends[i] as number)
  }

  /** Whether string token `i` decodes to `key`, an ASCII string, compared without decoding. */
  keyIs(i: number, key: string): boolean {
    const start = (this.starts[i] as number) + 1
    if (this.kinds[i] !== TAPE_STRING) return this.kinds[i] === TAPE_ESCAPED && this.stringValue(i) === key
    if ((this.ends[i] as number) - 1 - start !== key.length) return false
    const bytes = this.bytes
    for (let k = 0; k < key.length; k++) if (bytes[start + k] !== key.charCodeAt(k)) return false
    return true
  }

  /** The value token of member `key` of object `i` (the last one if it repeats, as `JSON.parse`); -1 if none or `i` is no object. */
  member(i: number, key: string): number {
    if (i < 0 || this.kinds[i] !== TAPE_OBJECT) return -1
    let found = -1
    const end = this.nexts[i] as number
    for (let k = i + 1; k < end; k = this.nexts[k + 1] as number) {
      if (this.keyIs(k, key)) found = k + 1
    }
    return found
  }

  /**
   * The value tokens of several members of object `i` in one pass over it, into `out` (one per
   * key, in order; -1 for a missing one, the last for a repeated one, as {@link member}).
   */
  members(i: number, keys: readonly string[], out: Int32Array): Int32Array {
    out.fill(-1, 0, keys.length)
    if (i < 0 || this.kinds[i] !== TAPE_OBJECT) return out
    const end = this.nexts[i] as number
    for (let k = i + 1; k < end; k = this.nexts[k + 1] as number) {
      for (let n = 0; n < keys.length; n++) {
        if (this.keyIs(k, keys[n] as string)) {
          out[n] = k + 1
          break
        }
      }
    }
    return out
  }

  /** Follows object keys from token `i`; -1 when a step is missing. */
  path(i: number, keys: readonly string[]): number {
    let current = i
    for (const key of keys) {
      current = this.member(current, key)
      if (current < 0) return -1
    }
    return current
  }

  /** {@link parse} of a string's UTF-8 bytes. */
  parseText(text: string): this {
    return this.parse(Buffer.from(text, 'utf8'))
  }

  /** Parses `bytes` as exactly one JSON value; throws `JsonSyntaxError` (with a byte offset) otherwise. */
  parse(bytes: Buffer): this {
    this.bytes = bytes
    this.count = 0
    const len = bytes.length
    let depth = 0
    let pos = 0

    const fail = (message: string, at: number): never => {
      if (at >= len) throw new JsonSyntaxError('Unexpected end of JSON input', len)
      throw new JsonSyntaxError(`${message} byte 0x${(bytes[at] as number).toString(16).padStart(2, '0')}`, at)
    }
    const skipWs = (i: number): number => {
      while (i < len) {
        const c = bytes[i]
        if (c !== SPACE && c !== LF && c !== CR && c !== TAB) break
        i++
      }
      return i
    }
    /** Records the string token at `start`; returns the offset after its closing quote. */
    const scanString = (start: number): number => {
      let i = start + 1
      let kind = TAPE_STRING
      for (;;) {
        // Most bytes of a string are none of the three kinds below: one table look-up each.
        while (i < len && STRING_PLAIN[bytes[i] as number] === 1) i++
        if (i >= len) fail('Unterminated string', len)
        const c = bytes[i] as number
        if (c === QUOTE) break
        if (c < SPACE) fail('Bad control character in string:', i)
        if (c === BACKSLASH) {
          kind = TAPE_ESCAPED
          const e = i + 1 < len ? (bytes[i + 1] as number) : -1
          if (e === 117) { // u
            for (let k = i + 2; k < i + 6; k++) if (k >= len || !isHex(bytes[k] as number)) fail('Bad Unicode escape:', k)
            i += 6
            continue
          }
          if (e < 0 || e >= 128 || SIMPLE_ESCAPE[e] !== 1) fail('Bad escaped character:', i + 1)
          i += 2
          continue
        }
        i++
      }
      const token = this.push(kind, start)
      this.ends[token] = i + 1
      this.nexts[token] = token + 1
      return i + 1
    }
    const scanNumber = (start: number): number => {
      let i = start
      let c = i < len ? (bytes[i] as number) : -1
      const at = (k: number): number => (k < len ? (bytes[k] as number) : -1)
      if (c === MINUS) c = at(++i)
      if (c === ZERO) {
        c = at(++i)
      } else if (c > ZERO && c <= NINE) {
        do c = at(++i)
        while (c >= ZERO && c <= NINE)
      } else {
        fail('No number after minus sign:', i)
      }
      if (c === DOT) {
        c = at(++i)
        if (!(c >= ZERO && c <= NINE)) fail('Unterminated fractional number:', i)
        do c = at(++i)
        while (c >= ZERO && c <= NINE)
      }
      if (c === LOWER_E || c === UPPER_E) {
        c = at(++i)
        if (c === PLUS || c === MINUS) c = at(++i)
        if (!(c >= ZERO && c <= NINE)) fail('Exponent part is missing a number:', i)
        do c = at(++i)
        while (c >= ZERO && c <= NINE)
      }
      const token = this.push(TAPE_NUMBER, start)
      this.ends[token] = i
      this.nexts[token] = token + 1
      return i
    }
    const literal = (word: string, kind: number, start: number): number => {
      for (let k = 0; k < word.length; k++) if (bytes[start + k] !== word.charCodeAt(k)) fail('Unexpected token', start + k)
      const token = this.push(kind, start)
      this.ends[token] = start + word.length
      this.nexts[token] = token + 1
      return start + word.length
    }
    /** Reads `"key" :` at `i` (whitespace first); returns the offset after the colon. */
    const readKey = (i: number): number => {
      i = skipWs(i)
      if (bytes[i] !== QUOTE) fail('Expected double-quoted property name, found', i)
      i = skipWs(scanString(i))
      if (bytes[i] !== COLON) fail("Expected ':' after property name, found", i)
      return i + 1
    }
    const close = (at: number): void => {
      const token = this.stack[--depth] as number
      this.ends[token] = at + 1
      this.nexts[token] = this.count
    }

    value: for (;;) {
      pos = skipWs(pos)
      const c = pos < len ? (bytes[pos] as number) : -1
      switch (c) {
        case LBRACE:
        case LBRACKET: {
          if (depth >= this.maxDepth) throw new JsonSyntaxError(`Nesting deeper than ${this.maxDepth} levels`, pos)
          const token = this.push(c === LBRACE ? TAPE_OBJECT : TAPE_ARRAY, pos)
          if (depth === this.stack.length) {
            const grown = new Int32Array(depth * 2)
            grown.set(this.stack)
            this.stack = grown
          }
          this.stack[depth++] = token
          pos = skipWs(pos + 1)
          if (bytes[pos] === (c === LBRACE ? RBRACE : RBRACKET)) {
            close(pos)
            pos++
            break
          }
          if (c === LBRACE) pos = readKey(pos)
          continue value
        }
        case QUOTE:
          pos = scanString(pos)
          break
        case 116: // t
          pos = literal('true', TAPE_TRUE, pos)
          break
        case 102: // f
          pos = literal('false', TAPE_FALSE, pos)
          break
        case 110: // n
          pos = literal('null', TAPE_NULL, pos)
          break
        default:
          if (c === MINUS || (c >= ZERO && c <= NINE)) {
            pos = scanNumber(pos)
            break
          }
          fail('Unexpected token', pos)
      }

      // A value just ended: close containers or move to the next element.
      for (;;) {
        pos = skipWs(pos)
        if (depth === 0) {
          if (pos !== len) fail('Unexpected non-whitespace character after JSON:', pos)
          return this
        }
        const top = this.stack[depth - 1] as number
        const isObject = this.kinds[top] === TAPE_OBJECT
        const d = pos < len ? bytes[pos] : -1
        if (d === COMMA) {
          pos++
          if (isObject) pos = readKey(pos)
          continue value
        }
        if (d === (isObject ? RBRACE : RBRACKET)) {
          close(pos)
          pos++
          continue
        }
        fail(isObject ? "Expected ',' or '}' after property value, found" : "Expected ',' or ']' after array element, found", pos)
      }
    }
  }

  private push(kind: number, start: number): number {
    const token = this.count
    if (token === this.kinds.length) this.grow()
    this.kinds[token] = kind
    this.starts[token] = start
    this.count = token + 1
    return token
  }

  private grow(): void {
    const size = this.kinds.length * 2
    const kinds = new Uint8Array(size)
    kinds.set(this.kinds)
    const starts = new Int32Array(size)
    starts.set(this.starts)
    const ends = new Int32Array(size)
    ends.set(this.ends)
    const nexts = new Int32Array(size)
    nexts.set(this.nexts)
    this.kinds = kinds
    this.starts = starts
    this.ends = ends
    this.nexts = nexts
  }
}
