import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalJson, firstDifference, JsonSyntaxError, parseOrderedJson } from '../../scripts/verify/ordered-json.js'

describe('ordered JSON', () => {
  it('reads what JSON.stringify writes, whatever the layout, to the same canonical text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(0, 2, 4), (value, indent) => {
        const text = JSON.stringify(value, null, indent)
        expect(canonicalJson(parseOrderedJson(text))).toBe(canonicalJson(parseOrderedJson(JSON.stringify(value))))
        expect(JSON.parse(canonicalJson(parseOrderedJson(text)))).toEqual(JSON.parse(text))
      }),
    )
  })

  it('keeps integer-like keys where they were, which JSON.parse does not', () => {
    const text = '{"b": 1, "10": 2, "2": 3}'
    expect(canonicalJson(parseOrderedJson(text))).toBe('{"b":1,"10":2,"2":3}')
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['2', '10', 'b'])
  })

  it('takes 1.0 and 1 for one number, and keeps every digit of a big integer', () => {
    expect(canonicalJson(parseOrderedJson('[1.0, 1, 1e2, 12345678901234567890123]'))).toBe('[1,1,100,12345678901234567890123]')
  })

  it('refuses what is not JSON', () => {
    for (const text of ['', '{', '{"a" 1}', '[1,]', '{"a": 1} x', "{'a': 1}", 'NaN']) {
      expect(() => parseOrderedJson(text), text).toThrow(JsonSyntaxError)
    }
  })

  it('names the first difference: key order, a value, the number of items', () => {
    const at = (a: string, b: string) => firstDifference(parseOrderedJson(a), parseOrderedJson(b))
    expect(at('{"a": 1, "b": 2}', '{"b": 2, "a": 1}')).toEqual({ path: '$', detail: 'keys [a, b] vs [b, a]' })
    expect(at('{"items": [{"id": 1}, {"id": 2}]}', '{"items": [{"id": 1}, {"id": 3}]}')).toEqual({ path: '$.items[1].id', detail: '2 vs 3' })
    expect(at('[1, 2]', '[1]')).toEqual({ path: '$', detail: '2 items vs 1' })
    expect(at('{"a b": "x"}', '{"a b": null}')).toEqual({ path: '$["a b"]', detail: '"x" vs null' })
    expect(at('{"a": [1, {"b": true}]}', '{"a": [1, {"b": true}]}')).toBeUndefined()
  })
})
