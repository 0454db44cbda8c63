import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { djangoUrlencode, djangoUrlencodedLength, parseQueryParams, quotePlus, unquotePlus } from './query-params.js'

describe('parseQueryParams (Django QueryDict semantics)', () => {
  it('answers the last value of a repeated key and keeps first-appearance order', () => {
    const params = parseQueryParams('limit=1&fields=_,id&limit=2')
    expect(params.get('limit')).toBe('2')
    expect(params.keys()).toEqual(['limit', 'fields'])
    expect(params.items()).toEqual([
      ['limit', '2'],
      ['fields', '_,id'],
    ])
    expect(params.lists()).toEqual([
      ['limit', ['1', '2']],
      ['fields', ['_,id']],
    ])
  })

  it('keeps blank values, skips empty fields and is case-sensitive', () => {
    const params = parseQueryParams('a&&b=&LIMIT=5')
    expect(params.has('a')).toBe(true)
    expect(params.get('a')).toBe('')
    expect(params.get('b')).toBe('')
    expect(params.has('limit')).toBe(false)
    expect(params.size).toBe(3)
  })

  it('decodes + as space, percent escapes as UTF-8, and invalid bytes as U+FFFD', () => {
    expect(unquotePlus('a+b%20c')).toBe('a b c')
    expect(unquotePlus('%C3%BC%E2%98%83')).toBe('ü☃')
    expect(unquotePlus('%FF')).toBe('\uFFFD')
    expect(unquotePlus('100%')).toBe('100%')
    expect(unquotePlus('%zz')).toBe('%zz')
    expect(unquotePlus('%00')).toBe('\u0000')
  })

  it('round-trips any key and value through Django-style urlencode', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'grapheme', minLength: 1 }), fc.string({ unit: 'grapheme' })), { maxLength: 6 }), (pairs) => {
        const lists = new Map<string, string[]>()
        for (const [k, v] of pairs) lists.set(k, [...(lists.get(k) ?? []), v])
        const encoded = djangoUrlencode([...lists])
        expect(parseQueryParams(encoded).lists()).toEqual([...lists])
      }),
    )
  })

  it('encodes like Python quote_plus', () => {
    expect(quotePlus('_,id')).toBe('_%2Cid')
    expect(quotePlus('a b*~.-')).toBe('a+b%2A~.-')
  })

  it('quotes like Python quote_plus whatever the text, plain words (left as they are) included', () => {
    // Python's rule, byte by byte over the UTF-8: unreserved bytes stay, a space is '+', the rest %XX.
    const reference = (text: string) =>
      [...new TextEncoder().encode(text)]
        .map((byte) => {
          const char = String.fromCharCode(byte)
          if (/[A-Za-z0-9_.~-]/.test(char)) return char
          return byte === 0x20 ? '+' : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
        })
        .join('')
    const words = fc.string({ unit: fc.constantFrom(...'abcXYZ019_.~-') })
    fc.assert(fc.property(fc.oneof(words, fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' })), (text) => {
      expect(quotePlus(text)).toBe(reference(text))
    }), { seed: 11, numRuns: 500 })
  })
})

describe('djangoUrlencodedLength', () => {
  it('is the length of what djangoUrlencode builds, for any keys and values', () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ maxLength: 12 }), fc.constantFrom('', ' ', 'a b', '~._-', 'é', '😀', '\ud800'))
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.array(text, { maxLength: 3 })), { maxLength: 5 }), (lists) => {
        expect(djangoUrlencodedLength(lists)).toBe(djangoUrlencode(lists).length)
      }),
      { numRuns: 500 },
    )
  })
})
