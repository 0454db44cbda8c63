/**
 * Django's `QueryDict` over a raw query string: the semantics every Wagtail view reads its
 * parameters with (docs/wagtail-compatibility.md#query-string-semantics). Repeated keys keep every value; `get` answers the last one;
 * iteration follows each key's first appearance. Keys are case-sensitive.
 * @module
 */

export interface QueryParams {
  /** True when the key appears at all (even as `?key` or `?key=`). */
  has(key: string): boolean
  /** The last value given for the key (Django's `QueryDict.__getitem__`/`get`). */
  get(key: string): string | undefined
  /** Keys in order of first appearance. */
  keys(): string[]
  /** `[key, last value]` in order of first appearance (`QueryDict.items()`). */
  items(): Array<[string, string]>
  /** `[key, every value]` in order of first appearance (`QueryDict.lists()`). */
  lists(): Array<[string, string[]]>
  readonly size: number
}

const utf8 = new TextDecoder('utf-8')
const utf8Encoder = new TextEncoder()

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  if (code >= 0x41 && code <= 0x46) return code - 0x37
  if (code >= 0x61 && code <= 0x66) return code - 0x57
  return -1
}

/**
 * Python's `unquote_plus(…, errors='replace')`: `+` is a space, `%XX` a byte, a malformed
 * escape stays literal, and invalid UTF-8 becomes U+FFFD.
 */
export function unquotePlus(text: string): string {
  if (!text.includes('%') && !text.includes('+')) return text
  const bytes: number[] = []
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x2b) {
      bytes.push(0x20)
    } else if (code === 0x25 && i + 2 < text.length && hexValue(text.charCodeAt(i + 1)) >= 0 && hexValue(text.charCodeAt(i + 2)) >= 0) {
      bytes.push(hexValue(text.charCodeAt(i + 1)) * 16 + hexValue(text.charCodeAt(i + 2)))
      i += 2
    } else if (code < 0x80) {
      bytes.push(code)
    } else {
      const cp = text.codePointAt(i)!
      if (cp > 0xffff) i++
      for (const b of utf8Encoder.encode(String.fromCodePoint(cp))) bytes.push(b)
    }
  }
  return utf8.decode(Uint8Array.from(bytes))
}

/** Parses the part of a URL after `?` (without the `?`) like `QueryDict(query_string)`. */
export function parseQueryParams(rawQuery: string): QueryParams {
  const lists = new Map<string, string[]>()
  if (rawQuery.length > 0) {
    for (const field of rawQuery.split('&')) {
      if (field.length === 0) continue // parse_qsl skips empty fields
      const eq = field.indexOf('=')
      const key = unquotePlus(eq < 0 ? field : field.slice(0, eq))
      const value = eq < 0 ? '' : unquotePlus(field.slice(eq + 1))
      const existing = lists.get(key)
      if (existing) existing.push(value)
      else lists.set(key, [value])
    }
  }
  return {
    has: (key) => lists.has(key),
    get: (key) => {
      const values = lists.get(key)
      return values ? values[values.length - 1] : undefined
    },
    keys: () => [...lists.keys()],
    items: () => [...lists].map(([k, v]) => [k, v[v.length - 1]!] as [string, string]),
    lists: () => [...lists].map(([k, v]) => [k, [...v]] as [string, string[]]),
    size: lists.size,
  }
}

/** What `quote_plus` leaves as it is: every character safe, so the text is its own quoting. */
const ALL_SAFE = /^[A-Za-z0-9_.~-]*$/

/** Python's `quote_plus` (safe: letters, digits, `_.-~`), as Django's `QueryDict.urlencode()` uses it. */
export function quotePlus(text: string): string {
  // Most keys and values are plain words: no bytes to look at (this runs for every forwarded query).
  if (ALL_SAFE.test(text)) return text
  let out = ''
  for (const byte of utf8Encoder.encode(text)) {
    const safe =
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x5f || byte === 0x2e || byte === 0x2d || byte === 0x7e
    if (safe) out += String.fromCharCode(byte)
    else if (byte === 0x20) out += '+'
    else out += '%' + byte.toString(16).toUpperCase().padStart(2, '0')
  }
  return out
}

/** How long `quotePlus(text)` is, without building it. */
function quotedLength(text: string): number {
  if (ALL_SAFE.test(text)) return text.length
  let length = 0
  for (const char of text) {
    const cp = char.codePointAt(0)!
    // ASCII: safe characters and the space (`+`) take one, the rest `%XX`; beyond, every UTF-8
    // byte is a `%XX` (a lone surrogate is encoded as U+FFFD, three bytes).
    if (cp < 0x80) length += ALL_SAFE.test(char) || cp === 0x20 ? 1 : 3
    else length += 3 * (cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4)
  }
  return length
}

/**
 * `djangoUrlencode(lists).length`, without building the text: the forward guard measures every
 * query it forwards, refused or not, and the text itself would be garbage at once
 * (docs/performance.md, "Refusals").
 */
export function djangoUrlencodedLength(lists: Array<[string, string[]]>): number {
  let length = 0
  let pairs = 0
  for (const [key, values] of lists) {
    const keyLength = quotedLength(key)
    for (const value of values) {
      length += keyLength + 1 + quotedLength(value)
      pairs++
    }
  }
  return pairs === 0 ? 0 : length + pairs - 1
}

/** Django's `QueryDict.urlencode()`: every value of every key, keys in first-appearance order. */
export function djangoUrlencode(lists: Array<[string, string[]]>): string {
  const out: string[] = []
  for (const [key, values] of lists) for (const value of values) out.push(`${quotePlus(key)}=${quotePlus(value)}`)
  return out.join('&')
}
