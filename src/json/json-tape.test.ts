import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JsonSyntaxError } from './json-spans.js'
import { JsonTape, TAPE_ARRAY, TAPE_FALSE, TAPE_NULL, TAPE_NUMBER, TAPE_OBJECT, TAPE_TRUE } from './json-tape.js'

/** The value at token `i` as `JSON.parse` gives it, read back from the tape alone (numbers through their raw text). */
function plainAt(tape: JsonTape, i: number): unknown {
  switch (tape.kind(i)) {
    case TAPE_OBJECT: {
      const out: Record<string, unknown> = {}
      for (let k = i + 1; k < tape.next(i); k = tape.next(k + 1)) {
        Object.defineProperty(out, tape.stringValue(k), { value: plainAt(tape, k + 1), enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    case TAPE_ARRAY: {
      const out: unknown[] = []
      for (let k = i + 1; k < tape.next(i); k = tape.next(k)) out.push(plainAt(tape, k))
      return out
    }
    case TAPE_NUMBER:
      return Number(tape.raw(i))
    case TAPE_TRUE:
      return true
    case TAPE_FALSE:
      return false
    case TAPE_NULL:
      return null
    default:
      return tape.stringValue(i)
  }
}

function outcome(parse: () => unknown): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: parse() }
  } catch {
    return { ok: false }
  }
}

const gap = fc.constantFrom<string | number | undefined>(undefined, 0, 2, 4, '\t', '\r\n \t', ' \n')

describe('JsonTape', () => {
  it('reads back what JSON.parse gives for any JSON value, in any formatting, with every span covering its token', () => {
    const tape = new JsonTape()
    fc.assert(
      fc.property(fc.jsonValue(), gap, (value, indent) => {
        const text = JSON.stringify(value, null, indent)
        const bytes = Buffer.from(text, 'utf8')
        tape.parse(bytes)
        expect(plainAt(tape, 0)).toEqual(JSON.parse(text))
        for (let i = 0; i < tape.count; i++) {
          const token = bytes.toString('utf8', tape.start(i), tape.end(i))
          expect(JSON.parse(token)).toEqual(plainAt(tape, i))
        }
      }),
      { numRuns: 500 },
    )
  })

  it('accepts exactly what JSON.parse accepts (strings over a JSON-ish alphabet)', () => {
    const alphabet = fc.constantFrom(
      ...'{}[]:,"\\/ \t\r\n0123456789.-+eEtrufalsnbx'.split(''),
      '\u0000', '\u001f', '\u00a0', '\u2028', '\ufeff', 'é', 'u00', 'u12', 'true', 'null', '"a"',
    )
    const tape = new JsonTape()
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 24 }), (text) => {
        expect(outcome(() => plainAt(tape.parse(Buffer.from(text, 'utf8')), 0))).toEqual(outcome(() => JSON.parse(text) as unknown))
      }),
      { numRuns: 5000 },
    )
  })

  it('accepts exactly what JSON.parse accepts (single-character mutations of valid JSON)', () => {
    const mutated = fc
      .tuple(fc.json(), fc.nat(), fc.nat({ max: 2 }), fc.constantFrom(...'{}[]:," \\0123456789.-+eE\u0001x'.split('')))
      .map(([json, at, op, ch]) => {
        const i = json.length === 0 ? 0 : at % json.length
        if (op === 0) return json.slice(0, i) + json.slice(i + 1)
        if (op === 1) return json.slice(0, i) + ch + json.slice(i)
        return json.slice(0, i) + ch + json.slice(i + 1)
      })
    const tape = new JsonTape()
    fc.assert(
      fc.property(mutated, (text) => {
        expect(outcome(() => plainAt(tape.parse(Buffer.from(text, 'utf8')), 0))).toEqual(outcome(() => JSON.parse(text) as unknown))
      }),
      { numRuns: 3000 },
    )
  })

  it('agrees with JSON.parse on arbitrary full-Unicode strings, escaped or raw', () => {
    const tape = new JsonTape()
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (value) => {
        for (const text of [JSON.stringify(value), JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)]) {
          expect(tape.parse(Buffer.from(text, 'utf8')).stringValue(0)).toBe(value)
        }
      }),
    )
  })

  it('keeps the raw digits of numbers', () => {
    const tape = new JsonTape().parse(Buffer.from('[12345678901234567890, 1.0, -0, 1E+2]'))
    const raws: string[] = []
    for (let k = 1; k < tape.next(0); k = tape.next(k)) raws.push(tape.raw(k))
    expect(raws).toEqual(['12345678901234567890', '1.0', '-0', '1E+2'])
  })

  it('looks up the last of duplicate keys, compares escaped keys by value, and follows paths', () => {
    const tape = new JsonTape().parse(Buffer.from('{"a": 1, "m\\u0065ta": {"b": [true]}, "a": 2}'))
    expect(tape.raw(tape.member(0, 'a'))).toBe('2')
    expect(tape.kind(tape.path(0, ['meta', 'b']))).toBe(TAPE_ARRAY)
    expect(tape.path(0, ['meta', 'c'])).toBe(-1)
    expect(tape.member(tape.member(0, 'a'), 'x')).toBe(-1)
    const keys = ['meta', 'missing', 'a']
    expect([...tape.members(0, keys, new Int32Array(3))]).toEqual(keys.map((key) => tape.member(0, key)))
    expect([...tape.members(tape.member(0, 'a'), keys, new Int32Array(3))]).toEqual([-1, -1, -1])
  })

  it('reports the byte offset of an error, and refuses nesting beyond its limit', () => {
    expect(() => new JsonTape().parse(Buffer.from('{"é": x}'))).toThrow(expect.objectContaining({ position: 7 }) as unknown as Error)
    expect(() => new JsonTape().parse(Buffer.from('[1'))).toThrow(JsonSyntaxError)
    const deep = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n))
    expect(() => new JsonTape(8).parse(deep(8))).not.toThrow()
    expect(() => new JsonTape(8).parse(deep(9))).toThrow(/Nesting deeper than 8/)
  })

  it('grows past its first size and is reused from body to body', () => {
    const tape = new JsonTape()
    const big = JSON.stringify(Array.from({ length: 2_000 }, (_, i) => ({ i, s: `x${i}` })))
    expect(plainAt(tape.parse(Buffer.from(big)), 0)).toEqual(JSON.parse(big))
    expect(plainAt(tape.parse(Buffer.from('{"small": []}')), 0)).toEqual({ small: [] })
  })
})
