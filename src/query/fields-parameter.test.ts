import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFieldsParameter as fakeParse, FieldsParseError } from '../../test/fake-wagtail/fields-param.js'
import { parseFieldsParameter } from './fields-parameter.js'

/** The fake CMS's parser, ported from Wagtail and checked against its transcripts, as this module's shape. */
function reference(input: string): unknown {
  const convert = (specs: ReturnType<typeof fakeParse>): unknown => specs.map(([name, negated, sub]) => ({ name, negated, sub: sub === null ? null : convert(sub) }))
  try {
    return { ok: true, fields: convert(fakeParse(input)) }
  } catch (error) {
    if (error instanceof FieldsParseError) return { ok: false, message: error.message }
    throw error
  }
}

describe('the fields parameter', () => {
  it.each([
    ['title', { ok: true, fields: [{ name: 'title', negated: false, sub: null }] }],
    ['_,id,-x', { ok: false, message: "negated fields with '_' doesn't make sense" }],
    ['*,title', { ok: false, message: "additional fields with '*' doesn't make sense" }],
    ['alias_of(title,-id)', { ok: true, fields: [{ name: 'alias_of', negated: false, sub: [{ name: 'title', negated: false, sub: null }, { name: 'id', negated: true, sub: null }] }] }],
    ['title,', { ok: false, message: "unexpected char ',' at position 6" }],
    ['ti tle', { ok: false, message: 'unexpected whitespace at position 2' }],
    ['a(b', { ok: false, message: 'unexpected end of input (did you miss out a close bracket?)' }],
    ['a)', { ok: false, message: "unexpected char ')' at position 1" }],
    ['ü☃', { ok: false, message: "unexpected char '☃' at position 1" }],
  ])('reads %j as Wagtail does', (input, expected) => {
    expect(parseFieldsParameter(input)).toEqual(expected)
  })

  it('agrees with the reference parser on any input of its alphabet (fast-check)', () => {
    const alphabet = fc.constantFrom('a', 'b', '_', '*', '-', ',', '(', ')', ' ', 'ü', '1', '\u2028', '!')
    fc.assert(fc.property(fc.array(alphabet, { maxLength: 14 }).map((chars) => chars.join('')), (input) => {
      expect(parseFieldsParameter(input)).toEqual(reference(input))
    }), { numRuns: 3000 })
  })
})
