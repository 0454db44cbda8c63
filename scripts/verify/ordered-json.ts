/**
 * JSON values that keep their members' order. `JSON.parse` moves integer-like keys to the front of
 * an object, and Wagtail's key order is part of what cms-shield promises, so the verifier parses
 * with its own small reader and compares these trees.
 * @module
 */

export type JsonValue =
  | { readonly t: 'object'; readonly entries: readonly (readonly [string, JsonValue])[] }
  | { readonly t: 'array'; readonly items: readonly JsonValue[] }
  | { readonly t: 'string'; readonly v: string }
  /** The number's canonical text: `1.0` and `1` are one value, big integers keep every digit. */
  | { readonly t: 'number'; readonly v: string }
  | { readonly t: 'literal'; readonly v: 'true' | 'false' | 'null' }

export class JsonSyntaxError extends Error {}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
const WHITESPACE = /[ \t\n\r]*/y

function canonicalNumber(text: string): string {
  if (/^-?[0-9]+$/.test(text)) return text === '-0' ? '0' : text
  return String(Number(text))
}

/** Parses `text` (strict JSON); throws `JsonSyntaxError` with the offset of the first error. */
export function parseOrderedJson(text: string): JsonValue {
  let pos = 0
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at offset ${pos}`)
  }
  const skip = (): void => {
    WHITESPACE.lastIndex = pos
    WHITESPACE.exec(text)
    pos = WHITESPACE.lastIndex
  }
  const readString = (): string => {
    // The slice between the quotes is itself valid JSON for JSON.parse once quoted again.
    const start = pos
    pos++
    while (pos < text.length) {
      const ch = text.charCodeAt(pos)
      if (ch === 0x22) {
        pos++
        try {
          return JSON.parse(text.slice(start, pos)) as string
        } catch {
          return fail('bad string')
        }
      }
      pos += ch === 0x5c ? 2 : 1
    }
    return fail('unterminated string')
  }
  const readValue = (depth: number): JsonValue => {
    if (depth > 512) fail('nesting too deep')
    skip()
    const ch = text[pos]
    if (ch === '{') {
      pos++
      const entries: [string, JsonValue][] = []
      skip()
      if (text[pos] === '}') {
        pos++
        return { t: 'object', entries }
      }
      for (;;) {
        skip()
        if (text[pos] !== '"') fail('expected a key')
        const key = readString()
        skip()
        if (text[pos] !== ':') fail("expected ':'")
        pos++
        entries.push([key, readValue(depth + 1)])
        skip()
        if (text[pos] === ',') pos++
        else if (text[pos] === '}') {
          pos++
          return { t: 'object', entries }
        } else fail("expected ',' or '}'")
      }
    }
    if (ch === '[') {
      pos++
      const items: JsonValue[] = []
      skip()
      if (text[pos] === ']') {
        pos++
        return { t: 'array', items }
      }
      for (;;) {
        items.push(readValue(depth + 1))
        skip()
        if (text[pos] === ',') pos++
        else if (text[pos] === ']') {
          pos++
          return { t: 'array', items }
        } else fail("expected ',' or ']'")
      }
    }
    if (ch === '"') return { t: 'string', v: readString() }
    for (const literal of ['true', 'false', 'null'] as const) {
      if (text.startsWith(literal, pos)) {
        pos += literal.length
        return { t: 'literal', v: literal }
      }
    }
    NUMBER.lastIndex = pos
    const number = NUMBER.exec(text)
    if (number) {
      pos = NUMBER.lastIndex
      return { t: 'number', v: canonicalNumber(number[0]) }
    }
    return fail('unexpected character')
  }
  const value = readValue(0)
  skip()
  if (pos !== text.length) fail('trailing text')
  return value
}

/** One line of JSON with the members in their order: equal texts mean equal values. */
export function canonicalJson(value: JsonValue): string {
  switch (value.t) {
    case 'object':
      return `{${value.entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`
    case 'array':
      return `[${value.items.map(canonicalJson).join(',')}]`
    case 'string':
      return JSON.stringify(value.v)
    default:
      return value.v
  }
}

/** The member `key` of an object, if `value` is one and has it. */
export function member(value: JsonValue | undefined, key: string): JsonValue | undefined {
  return value?.t === 'object' ? value.entries.find(([name]) => name === key)?.[1] : undefined
}

function short(value: JsonValue): string {
  const text = canonicalJson(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

const pathOf = (path: string, key: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`)

/** The first place two values differ, as `$.items[3].meta: keys [a, b] vs [b, a]`; undefined when equal. */
export function firstDifference(cms: JsonValue, shield: JsonValue, path = '$'): { path: string; detail: string } | undefined {
  if (cms.t !== shield.t) return { path, detail: `${short(cms)} vs ${short(shield)}` }
  if (cms.t === 'object' && shield.t === 'object') {
    const a = cms.entries.map(([key]) => key)
    const b = shield.entries.map(([key]) => key)
    if (a.join('\u0000') !== b.join('\u0000')) {
      const names = (keys: string[]) => `[${keys.join(', ')}]`
      return { path, detail: `keys ${names(a)} vs ${names(b)}` }
    }
    for (let i = 0; i < cms.entries.length; i++) {
      const [key, value] = cms.entries[i]!
      const found = firstDifference(value, shield.entries[i]![1], pathOf(path, key))
      if (found) return found
    }
    return undefined
  }
  if (cms.t === 'array' && shield.t === 'array') {
    for (let i = 0; i < Math.min(cms.items.length, shield.items.length); i++) {
      const found = firstDifference(cms.items[i]!, shield.items[i]!, `${path}[${i}]`)
      if (found) return found
    }
    if (cms.items.length !== shield.items.length) return { path, detail: `${cms.items.length} items vs ${shield.items.length}` }
    return undefined
  }
  return canonicalJson(cms) === canonicalJson(shield) ? undefined : { path, detail: `${short(cms)} vs ${short(shield)}` }
}
