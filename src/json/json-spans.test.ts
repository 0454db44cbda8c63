import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { getMember, getPath, JsonSyntaxError, parseJsonSpans, toPlain, type JsonNode } from './json-spans.js'

/** Every node in document order. */
function allNodes(root: JsonNode): JsonNode[] {
  const out: JsonNode[] = []
  const visit = (node: JsonNode): void => {
    out.push(node)
    if (node.kind === 'array') node.items.forEach(visit)
    else if (node.kind === 'object') for (const entry of node.entries) visit(entry.value)
  }
  visit(root)
  return out
}

/** Checks that every span (and every key span) in the tree really covers its value in `text`. */
function expectSpansMatch(text: string, root: JsonNode): void {
  for (const node of allNodes(root)) {
    expect(JSON.parse(text.slice(node.start, node.end))).toEqual(toPlain(node))
    if (node.kind === 'number') expect(node.raw).toBe(text.slice(node.start, node.end))
    if (node.kind === 'object') {
      for (const { key, keyStart, value } of node.entries) {
        // Between the key's opening quote and its value lie only the key token, a colon and whitespace.
        const keyToken = text.slice(keyStart, value.start).replace(/[ \t\r\n]*:[ \t\r\n]*$/, '')
        expect(JSON.parse(keyToken)).toBe(key)
      }
    }
  }
}

function outcome(parse: () => unknown): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: parse() }
  } catch {
    return { ok: false }
  }
}

/** Whitespace-rich but valid formatting: JSON.stringify accepts any gap string. */
const gap = fc.constantFrom<string | number | undefined>(undefined, 0, 2, 4, '\t', '\r\n \t', ' \n')

describe('parseJsonSpans', () => {
  it('agrees with JSON.parse on any JSON value, in any formatting', () => {
    fc.assert(
      fc.property(fc.jsonValue(), gap, (value, indent) => {
        const text = JSON.stringify(value, null, indent)
        const root = parseJsonSpans(text)
        expect(toPlain(root)).toEqual(JSON.parse(text))
        expectSpansMatch(text, root)
      }),
      { numRuns: 500 },
    )
  })

  it('agrees with JSON.parse on fc.json() texts, including surrounding whitespace', () => {
    fc.assert(
      fc.property(fc.json(), fc.stringMatching(/^[ \t\r\n]*$/), fc.stringMatching(/^[ \t\r\n]*$/), (json, pre, post) => {
        const text = pre + json + post
        const root = parseJsonSpans(text)
        expect(toPlain(root)).toEqual(JSON.parse(text))
        expectSpansMatch(text, root)
        expect(root.start).toBe(pre.length)
        expect(root.end).toBe(pre.length + json.length)
      }),
      { numRuns: 500 },
    )
  })

  it('accepts exactly what JSON.parse accepts (strings over a JSON-ish alphabet)', () => {
    const alphabet = fc.constantFrom(
      ...'{}[]:,"\\/ \t\r\n0123456789.-+eEtrufalsnbx'.split(''),
      '\u0000', '\u001f', '\u00a0', '\u2028', '\ufeff', '\ud800', 'é', 'u00', 'u12', 'true', 'null', '"a"',
    )
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 24 }), (text) => {
        const ours = outcome(() => toPlain(parseJsonSpans(text)))
        const theirs = outcome(() => JSON.parse(text) as unknown)
        expect(ours).toEqual(theirs)
      }),
      { numRuns: 5000 },
    )
  })

  it('accepts exactly what JSON.parse accepts (single-character mutations of valid JSON)', () => {
    const mutated = fc
      .tuple(fc.json(), fc.nat(), fc.nat({ max: 2 }), fc.constantFrom(...'{}[]:," \\0123456789.-+eE\u0001x'.split('')))
      .map(([json, at, op, ch]) => {
        const i = json.length === 0 ? 0 : at % json.length
        if (op === 0) return json.slice(0, i) + json.slice(i + 1) // delete
        if (op === 1) return json.slice(0, i) + ch + json.slice(i) // insert
        return json.slice(0, i) + ch + json.slice(i + 1) // replace
      })
    fc.assert(
      fc.property(mutated, (text) => {
        expect(outcome(() => toPlain(parseJsonSpans(text)))).toEqual(outcome(() => JSON.parse(text) as unknown))
      }),
      { numRuns: 3000 },
    )
  })

  it('also agrees with JSON.parse on arbitrary full-Unicode strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 12 }), (text) => {
        expect(outcome(() => toPlain(parseJsonSpans(text)))).toEqual(outcome(() => JSON.parse(text) as unknown))
      }),
      { numRuns: 2000 },
    )
  })

  it('keeps the raw text of numbers that JSON.parse would change', () => {
    const text = '{"big": 12345678901234567890, "float": 1.0, "neg": -0, "exp": 1E+2, "small": 1e-7, "frac": 0.50}'
    const root = parseJsonSpans(text)
    const raws = ['big', 'float', 'neg', 'exp', 'small', 'frac'].map((k) => {
      const node = getMember(root, k)
      return node?.kind === 'number' ? node.raw : undefined
    })
    expect(raws).toEqual(['12345678901234567890', '1.0', '-0', '1E+2', '1e-7', '0.50'])
  })

  it.each([
    ['', 'empty input'],
    ['   ', 'whitespace only'],
    ['01', 'leading zero'],
    ['-01', 'leading zero after minus'],
    ['-', 'bare minus'],
    ['1.', 'missing fraction'],
    ['.5', 'missing integer part'],
    ['1e', 'missing exponent'],
    ['1e+', 'missing exponent digits'],
    ['+1', 'plus sign'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['"\t"', 'raw tab in string'],
    ['"\u0000"', 'raw NUL in string'],
    ['"\\x"', 'bad escape'],
    ['"\\u12G4"', 'bad unicode escape'],
    ['"\\u12"', 'short unicode escape'],
    ['"abc', 'unterminated string'],
    ["'a'", 'single quotes'],
    ['[1,]', 'trailing comma in array'],
    ['{"a":1,}', 'trailing comma in object'],
    ['{a:1}', 'unquoted key'],
    ['{"a" 1}', 'missing colon'],
    ['[1 2]', 'missing comma'],
    ['tru', 'truncated literal'],
    ['nulll', 'trailing garbage after literal'],
    ['1 2', 'two values'],
    ['{} x', 'trailing garbage'],
    ['\u00a01', 'NBSP is not JSON whitespace'],
    ['\ufeff1', 'byte order mark'],
    ['[', 'unclosed array'],
    ['{"a":1', 'unclosed object'],
    ['[}', 'mismatched bracket'],
  ])('rejects %j (%s) like JSON.parse does', (text) => {
    expect(() => JSON.parse(text)).toThrow(SyntaxError)
    expect(() => parseJsonSpans(text)).toThrow(JsonSyntaxError)
  })

  it('reports the position of the error', () => {
    const err = outcomeError(() => parseJsonSpans('{"a": [1, 2,, 3]}'))
    expect(err).toBeInstanceOf(JsonSyntaxError)
    expect(err).toBeInstanceOf(SyntaxError)
    expect((err as JsonSyntaxError).position).toBe(12)
    expect((err as JsonSyntaxError).message).toMatch(/at position 12$/)
    expect((outcomeError(() => parseJsonSpans('[1, 2')) as JsonSyntaxError).position).toBe(5)
  })

  it('keeps lone surrogates, escaped or raw, as JSON.parse does', () => {
    for (const text of ['"\\ud800"', '"\\udc00x\\ud83d"', '"\ud800"', '"\\uD83D\\uDE00"']) {
      expect(toPlain(parseJsonSpans(text))).toBe(JSON.parse(text))
    }
  })

  it('decodes every escape', () => {
    const text = '"a\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\\u00e9\\u00E9j"'
    expect(toPlain(parseJsonSpans(text))).toBe(JSON.parse(text))
  })

  it('handles deep nesting up to the limit and rejects beyond it with a clear error', () => {
    const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n)
    expect(allNodes(parseJsonSpans(deep(512)))).toHaveLength(512)
    expect(() => parseJsonSpans(deep(513))).toThrow(/Nesting deeper than 512 levels/)
    const thousand = parseJsonSpans(deep(1000), { maxDepth: 1000 })
    expect(JSON.stringify(toPlain(thousand))).toBe(deep(1000))
    // No stack overflow, however deep the input.
    expect(() => parseJsonSpans(deep(200_000))).toThrow(JsonSyntaxError)
  })

  it('keeps duplicate keys in order and looks up the last one, like JSON.parse', () => {
    const root = parseJsonSpans('{"a": 1, "b": 2, "a": 3}')
    expect(root.kind === 'object' && root.entries.map((e) => e.key)).toEqual(['a', 'b', 'a'])
    expect(toPlain(getMember(root, 'a') as JsonNode)).toBe(3)
    expect(toPlain(root)).toEqual(JSON.parse('{"a": 1, "b": 2, "a": 3}'))
  })

  it('keeps the source order of integer-like keys that JS objects would reorder', () => {
    const root = parseJsonSpans('{"b": 0, "2": 0, "1": 0}')
    expect(root.kind === 'object' && root.entries.map((e) => e.key)).toEqual(['b', '2', '1'])
  })

  it('makes "__proto__" an own property, not a prototype', () => {
    const text = '{"__proto__": {"polluted": true}}'
    const plain = toPlain(parseJsonSpans(text)) as Record<string, unknown>
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype)
    expect(Object.keys(plain)).toEqual(['__proto__'])
    expect(plain).toEqual(JSON.parse(text))
  })

  it('walks paths through objects and arrays', () => {
    const root = parseJsonSpans('{"meta": {"parent": {"id": 7}}, "items": [{"id": 1}, {"id": 2}]}')
    expect(toPlain(getPath(root, ['meta', 'parent', 'id']) as JsonNode)).toBe(7)
    expect(toPlain(getPath(root, ['items', 1, 'id']) as JsonNode)).toBe(2)
    expect(getPath(root, ['items', 2, 'id'])).toBeUndefined()
    expect(getPath(root, ['meta', 0])).toBeUndefined()
    expect(getPath(root, ['items', 'id'])).toBeUndefined()
    expect(getPath(root, [])).toBe(root)
    expect(getMember(undefined, 'x')).toBeUndefined()
  })
})

function outcomeError(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected a throw')
}
