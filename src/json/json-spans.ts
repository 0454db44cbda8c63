/**
 * A strict RFC 8259 parser that keeps where every value sits in the source text.
 *
 * The proxy re-serves the CMS's own JSON bytes: re-serialising through `JSON.parse` would lose
 * integers beyond 2^53, turn `1.0` into `1` and reorder integer-like object keys. Instead we parse
 * once to learn the *spans* of values and splice replacements into the original text
 * (see `json-text.ts`). Numbers therefore keep their raw text; nothing here ever re-serialises.
 *
 * The parser is a single iterative pass over char codes (an explicit stack, no recursion), so deep
 * input cannot overflow the call stack; nesting beyond `maxDepth` is rejected with a clear error.
 * @module
 */

export interface ObjectEntry {
  /** The decoded key. */
  readonly key: string
  /** Offset of the key's opening quote. */
  keyStart: number
  readonly value: JsonNode
}

/** Spans are UTF-16 offsets into the parsed string: `start` inclusive, `end` exclusive. */
export interface ObjectNode {
  readonly kind: 'object'
  start: number
  end: number
  /** In source order, duplicates included (lookups take the last, as `JSON.parse` does). */
  readonly entries: ObjectEntry[]
}

export interface ArrayNode {
  readonly kind: 'array'
  start: number
  end: number
  readonly items: JsonNode[]
}

/** A string token; its span includes both quotes. */
export interface StringNode {
  readonly kind: 'string'
  start: number
  end: number
  /** The decoded value (lone surrogates from `\uD800`-style escapes are kept, like `JSON.parse`). */
  value: string
}

export interface NumberNode {
  readonly kind: 'number'
  start: number
  end: number
  /** The exact source text, e.g. `12345678901234567890` or `1.0`. */
  readonly raw: string
}

export interface LiteralNode {
  readonly kind: 'true' | 'false' | 'null'
  start: number
  end: number
}

// Spans are mutable only so that `rewriteDetailUrlsWithSpans` can shift a freshly parsed tree
// in place instead of parsing the rewritten text a second time.
export type JsonNode = ObjectNode | ArrayNode | StringNode | NumberNode | LiteralNode

export class JsonSyntaxError extends SyntaxError {
  /** UTF-16 offset in the input where parsing failed. */
  readonly position: number

  constructor(message: string, position: number) {
    super(`${message} at position ${position}`)
    this.name = 'JsonSyntaxError'
    this.position = position
  }
}

export interface ParseOptions {
  /**
   * Deepest allowed nesting of arrays/objects (the root container is depth 1). Wagtail bodies are
   * a handful of levels deep; the cap only stops pathological input. The parser itself has no
   * stack limit, but `toPlain` and the tree walkers recurse, so keep this below a few thousand.
   */
  readonly maxDepth?: number
}

export const DEFAULT_MAX_DEPTH = 512

// Char codes, named so that the state machine below reads as grammar.
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

/** Parses `text` as exactly one JSON value (surrounded by optional whitespace). */
export function parseJsonSpans(text: string, options: ParseOptions = {}): JsonNode {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH
  const len = text.length
  let pos = 0
  let root: JsonNode | undefined
  const stack: Array<ObjectNode | ArrayNode> = []
  // The key waiting for its value when the top of the stack is an object.
  let pendingKey = ''
  let pendingKeyStart = 0
  // Written by `scanString`, which returns the end offset; avoids allocating a result pair.
  let scanned = ''

  function fail(message: string, at: number): never {
    if (at >= len) throw new JsonSyntaxError('Unexpected end of JSON input', len)
    throw new JsonSyntaxError(`${message} ${describe(text.charCodeAt(at))}`, at)
  }

  function skipWs(i: number): number {
    while (i < len) {
      const c = text.charCodeAt(i)
      if (c !== SPACE && c !== LF && c !== CR && c !== TAB) break
      i++
    }
    return i
  }

  /** Scans the string token whose opening quote is at `start`; sets `scanned`, returns its end. */
  function scanString(start: number): number {
    let i = start + 1
    // Fast path: most strings have no escapes and become a single slice.
    for (;;) {
      if (i >= len) fail('Unterminated string', len)
      const c = text.charCodeAt(i)
      if (c === QUOTE) {
        scanned = text.slice(start + 1, i)
        return i + 1
      }
      if (c === BACKSLASH) break
      if (c < SPACE) fail('Bad control character in string:', i)
      i++
    }
    let out = text.slice(start + 1, i)
    let chunk = i
    for (;;) {
      if (i >= len) fail('Unterminated string', len)
      const c = text.charCodeAt(i)
      if (c === QUOTE) {
        scanned = out + text.slice(chunk, i)
        return i + 1
      }
      if (c < SPACE) fail('Bad control character in string:', i)
      if (c !== BACKSLASH) {
        i++
        continue
      }
      out += text.slice(chunk, i)
      const e = i + 1 < len ? text.charCodeAt(i + 1) : -1
      switch (e) {
        case QUOTE: out += '"'; break
        case BACKSLASH: out += '\\'; break
        case SLASH: out += '/'; break
        case 98: out += '\b'; break // b
        case 102: out += '\f'; break // f
        case 110: out += '\n'; break // n
        case 114: out += '\r'; break // r
        case 116: out += '\t'; break // t
        case 117: { // u
          let code = 0
          for (let k = i + 2; k < i + 6; k++) {
            const h = k < len ? hexValue(text.charCodeAt(k)) : -1
            if (h < 0) fail('Bad Unicode escape:', k)
            code = (code << 4) | h
          }
          // Halves are appended one by one, so lone surrogates survive exactly as in JSON.parse.
          out += String.fromCharCode(code)
          i += 6
          chunk = i
          continue
        }
        default:
          fail('Bad escaped character:', i + 1)
      }
      i += 2
      chunk = i
    }
  }

  /** Validates the number token at `start` (RFC 8259 §6 grammar) and returns its end. */
  function scanNumber(start: number): number {
    let i = start
    let c = text.charCodeAt(i)
    if (c === MINUS) c = text.charCodeAt(++i)
    if (c === ZERO) {
      c = text.charCodeAt(++i)
    } else if (c > ZERO && c <= NINE) {
      do c = text.charCodeAt(++i)
      while (c >= ZERO && c <= NINE)
    } else {
      fail('No number after minus sign:', i)
    }
    if (c === DOT) {
      c = text.charCodeAt(++i)
      if (!(c >= ZERO && c <= NINE)) fail('Unterminated fractional number:', i)
      do c = text.charCodeAt(++i)
      while (c >= ZERO && c <= NINE)
    }
    if (c === LOWER_E || c === UPPER_E) {
      c = text.charCodeAt(++i)
      if (c === PLUS || c === MINUS) c = text.charCodeAt(++i)
      if (!(c >= ZERO && c <= NINE)) fail('Exponent part is missing a number:', i)
      do c = text.charCodeAt(++i)
      while (c >= ZERO && c <= NINE)
    }
    // A digit right after a lone `0` (leading zero) is caught by the caller: it is not a
    // separator, so "Unexpected ... after JSON" / "expected ',' or ']'" reports it.
    return i
  }

  function expectWord(word: string, at: number): number {
    for (let k = 0; k < word.length; k++) {
      if (text.charCodeAt(at + k) !== word.charCodeAt(k)) fail('Unexpected token', at + k)
    }
    return at + word.length
  }

  function attach(node: JsonNode): void {
    const parent = stack[stack.length - 1]
    if (parent === undefined) root = node
    else if (parent.kind === 'array') parent.items.push(node)
    else parent.entries.push({ key: pendingKey, keyStart: pendingKeyStart, value: node })
  }

  /** Reads `"key" :` at `i` (after skipping whitespace) into the pending key; returns the offset after the colon. */
  function readKey(i: number): number {
    i = skipWs(i)
    if (text.charCodeAt(i) !== QUOTE) fail("Expected double-quoted property name, found", i)
    pendingKeyStart = i
    i = skipWs(scanString(i))
    pendingKey = scanned
    if (text.charCodeAt(i) !== COLON) fail("Expected ':' after property name, found", i)
    return i + 1
  }

  value: for (;;) {
    // State: a value is expected at `pos`.
    pos = skipWs(pos)
    const start = pos
    const c = text.charCodeAt(pos)
    let node: JsonNode
    switch (c) {
      case LBRACE:
      case LBRACKET: {
        if (stack.length >= maxDepth) {
          throw new JsonSyntaxError(`Nesting deeper than ${maxDepth} levels`, pos)
        }
        const container: ObjectNode | ArrayNode =
          c === LBRACE
            ? { kind: 'object', start, end: -1, entries: [] }
            : { kind: 'array', start, end: -1, items: [] }
        attach(container)
        stack.push(container)
        pos = skipWs(pos + 1)
        const close = text.charCodeAt(pos)
        if (close === (c === LBRACE ? RBRACE : RBRACKET)) {
          container.end = pos + 1
          pos++
          stack.pop()
          break // to the after-value state
        }
        if (c === LBRACE) pos = readKey(pos)
        continue value
      }
      case QUOTE:
        pos = scanString(pos)
        node = { kind: 'string', start, end: pos, value: scanned }
        attach(node)
        break
      case 116: // t
      case 102: // f
      case 110: { // n
        const word = c === 116 ? 'true' : c === 102 ? 'false' : 'null'
        pos = expectWord(word, pos)
        node = { kind: word, start, end: pos }
        attach(node)
        break
      }
      default:
        if (c === MINUS || (c >= ZERO && c <= NINE)) {
          pos = scanNumber(pos)
          node = { kind: 'number', start, end: pos, raw: text.slice(start, pos) }
          attach(node)
          break
        }
        fail('Unexpected token', pos)
    }

    // State: a value just ended; close containers or move to the next element.
    for (;;) {
      pos = skipWs(pos)
      const top = stack[stack.length - 1]
      if (top === undefined) {
        if (pos !== len) fail('Unexpected non-whitespace character after JSON:', pos)
        // `root` is always set once a value has been attached at depth 0.
        return root as JsonNode
      }
      const d = text.charCodeAt(pos)
      if (d === COMMA) {
        pos++
        if (top.kind === 'object') pos = readKey(pos)
        continue value
      }
      if (d === (top.kind === 'object' ? RBRACE : RBRACKET)) {
        top.end = pos + 1
        pos++
        stack.pop()
        continue
      }
      fail(top.kind === 'object' ? "Expected ',' or '}' after property value, found" : "Expected ',' or ']' after array element, found", pos)
    }
  }
}

function hexValue(c: number): number {
  if (c >= ZERO && c <= NINE) return c - ZERO
  const lower = c | 0x20
  if (lower >= 97 && lower <= 102) return lower - 87
  return -1
}

function describe(c: number): string {
  return c >= SPACE && c < 127 ? `'${String.fromCharCode(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`
}

/** The value of `key` in an object node (the last one, like `JSON.parse`, if the key repeats). */
export function getMember(node: JsonNode | undefined, key: string): JsonNode | undefined {
  if (node === undefined || node.kind !== 'object') return undefined
  const entries = node.entries
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]
    if (entry !== undefined && entry.key === key) return entry.value
  }
  return undefined
}

/** Follows object keys (strings) and array indexes (numbers); `undefined` if any step is missing. */
export function getPath(node: JsonNode | undefined, path: ReadonlyArray<string | number>): JsonNode | undefined {
  let current = node
  for (const step of path) {
    if (current === undefined) return undefined
    if (typeof step === 'number') current = current.kind === 'array' ? current.items[step] : undefined
    else current = getMember(current, step)
  }
  return current
}

/**
 * Converts a node to the plain value `JSON.parse` would give, for reading fields only: numbers go
 * through `Number(raw)` and so lose what the raw text keeps. Never serialise the result back out.
 */
export function toPlain(node: JsonNode): unknown {
  switch (node.kind) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const { key, value } of node.entries) {
        // Plain assignment of "__proto__" would set the prototype; JSON.parse makes an own property.
        if (key === '__proto__') {
          Object.defineProperty(out, key, { value: toPlain(value), enumerable: true, writable: true, configurable: true })
        } else {
          out[key] = toPlain(value)
        }
      }
      return out
    }
    case 'array':
      return node.items.map(toPlain)
    case 'string':
      return node.value
    case 'number':
      return Number(node.raw)
    case 'true':
      return true
    case 'false':
      return false
    case 'null':
      return null
  }
}
