import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { pythonInt } from './python-int.js'
import { pythonRepr } from './python-repr.js'

describe('pythonInt', () => {
  it.each([
    ['10', 10n],
    ['1_0', 10n],
    ['+2', 2n],
    [' 2 ', 2n],
    ['-3', -3n],
    ['007', 7n],
    ['\u0663', 3n], // ARABIC-INDIC DIGIT THREE
    ['\u3000 5\n', 5n],
    ['99999999999999999999', 99999999999999999999n],
  ])('accepts %j as Python does', (text, value) => {
    expect(pythonInt(text)).toEqual({ ok: true, value })
  })

  it.each(['', ' ', 'abc', '1.5', '1__0', '_1', '1_', '+', '- 1', '0x10', '1e3'])('refuses %j with Python\'s text', (text) => {
    expect(pythonInt(text)).toEqual({ ok: false, message: `invalid literal for int() with base 10: ${pythonRepr(text)}` })
  })

  it('cuts the repr in the message at 200 characters, like %.200R', () => {
    const result = pythonInt('x'.repeat(300))
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.message).toBe(`invalid literal for int() with base 10: '${'x'.repeat(199)}`)
  })

  it('refuses more than 4300 digits like CPython 3.11+', () => {
    const result = pythonInt('1'.repeat(4301))
    expect(result).toEqual({
      ok: false,
      message:
        'Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit',
    })
  })

  it('agrees with BigInt on every plain decimal string', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), (n) => {
        expect(pythonInt(n.toString())).toEqual({ ok: true, value: n })
      }),
    )
  })

  it('never throws on arbitrary text', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (text) => void pythonInt(text)))
  })
})

describe('pythonRepr', () => {
  it.each([
    ['abc', "'abc'"],
    ["it's", '"it\'s"'],
    ['say "hi"', '\'say "hi"\''],
    ['both \' and "', "'both \\' and \"'"],
    ['a\u0000b', "'a\\x00b'"],
    ['tab\there', "'tab\\there'"],
    ['back\\slash', "'back\\\\slash'"],
    ['ü ☃', "'ü ☃'"],
    ['\u00a0', "'\\xa0'"],
    ['\u2028', "'\\u2028'"],
    ['\u{e0001}', "'\\U000e0001'"],
  ])('writes %j as %s', (text, repr) => {
    expect(pythonRepr(text)).toBe(repr)
  })
})
