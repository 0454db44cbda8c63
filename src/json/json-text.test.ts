import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jsonString, renderWagtailJson, spliceText, type TextEdit } from './json-text.js'

/** Non-overlapping edits over a text of length `n`, in shuffled order. */
const editsFor = (n: number): fc.Arbitrary<TextEdit[]> =>
  fc
    .uniqueArray(fc.integer({ min: 0, max: n }), { maxLength: 12 })
    .chain((cuts) => {
      const sorted = [...cuts].sort((a, b) => a - b)
      const pairs: Array<[number, number]> = []
      for (let i = 0; i + 1 < sorted.length; i += 2) pairs.push([sorted[i] as number, sorted[i + 1] as number])
      return fc.tuple(
        fc.constant(pairs),
        fc.array(fc.string({ maxLength: 5 }), { minLength: pairs.length, maxLength: pairs.length }),
      )
    })
    .map(([pairs, replacements]) => pairs.map(([start, end], i) => ({ start, end, replacement: replacements[i] as string })))
    .chain((edits) => fc.shuffledSubarray(edits, { minLength: edits.length, maxLength: edits.length }))

describe('spliceText', () => {
  it('matches applying the edits one by one from the end, in any input order', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).chain((text) => fc.tuple(fc.constant(text), editsFor(text.length))),
        ([text, edits]) => {
          let expected = text
          for (const e of [...edits].sort((a, b) => b.start - a.start)) {
            expected = expected.slice(0, e.start) + e.replacement + expected.slice(e.end)
          }
          expect(spliceText(text, edits)).toBe(expected)
        },
      ),
    )
  })

  it('returns the text itself when there is nothing to do', () => {
    expect(spliceText('abc', [])).toBe('abc')
  })

  it('allows touching edits and insertions', () => {
    expect(
      spliceText('abcdef', [
        { start: 2, end: 4, replacement: 'X' },
        { start: 0, end: 2, replacement: 'Y' },
        { start: 6, end: 6, replacement: '!' },
      ]),
    ).toBe('YXef!')
  })

  it('refuses overlapping or out-of-range edits', () => {
    expect(() =>
      spliceText('abcdef', [
        { start: 0, end: 3, replacement: '' },
        { start: 2, end: 4, replacement: '' },
      ]),
    ).toThrow(RangeError)
    expect(() => spliceText('abc', [{ start: 2, end: 4, replacement: '' }])).toThrow(RangeError)
    expect(() => spliceText('abc', [{ start: 2, end: 1, replacement: '' }])).toThrow(RangeError)
    expect(() => spliceText('abc', [{ start: -1, end: 1, replacement: '' }])).toThrow(RangeError)
  })
})

describe('jsonString', () => {
  it('round-trips any string and never emits raw line/paragraph separators', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const token = jsonString(s)
        expect(JSON.parse(token)).toBe(s)
        expect(token).not.toMatch(/[\u2028\u2029]/)
        expect(token.replace(/\\u2028/g, '\u2028').replace(/\\u2029/g, '\u2029')).toBe(
          JSON.stringify(s).replace(/\\u2028/g, '\u2028').replace(/\\u2029/g, '\u2029'),
        )
      }),
    )
  })

  it('writes strings the way DRF does', () => {
    expect(jsonString('Café “quotes” 日本')).toBe('"Café “quotes” 日本"')
    expect(jsonString('a\u2028b\u2029c')).toBe('"a\\u2028b\\u2029c"')
    expect(jsonString('"\\\n\t\u0001/')).toBe('"\\"\\\\\\n\\t\\u0001/"')
  })
})

describe('renderWagtailJson', () => {
  it('renders with a 4-space indent and escaped separators', () => {
    expect(renderWagtailJson({ message: 'No Page matches the given query.' })).toBe(
      '{\n    "message": "No Page matches the given query."\n}',
    )
    expect(renderWagtailJson({ a: [1, { b: '\u2028' }], c: [], d: {} })).toBe(
      '{\n    "a": [\n        1,\n        {\n            "b": "\\u2028"\n        }\n    ],\n    "c": [],\n    "d": {}\n}',
    )
  })

  it('refuses values with no JSON form', () => {
    expect(() => renderWagtailJson(undefined)).toThrow(TypeError)
  })
})
