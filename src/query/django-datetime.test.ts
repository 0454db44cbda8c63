import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { djangoDateTime } from './django-datetime.js'

const invalid = (value: string) => `“${value}” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.`
const invalidDate = (value: string) => `“${value}” value has the correct format (YYYY-MM-DD) but it is an invalid date.`
const invalidDatetime = (value: string) =>
  `“${value}” value has the correct format (YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ]) but it is an invalid date/time.`

describe('djangoDateTime (DateTimeField.to_python)', () => {
  it.each([
    '2024-05-06',
    '2024-5-6',
    '2024-05-06T07:08',
    '2024-05-06 07:08:09',
    '2024-05-06T07:08:09.873443Z',
    '2024-05-06T07:08:09,5+02:00',
    '2024-05-06T07:08:09 -0530',
    '2024-02-29',
    '2000-02-29T00:00',
    // Python's `$` also matches before a final newline; `\d` is any Unicode digit.
    '2024-05-06\n',
    '٢٠٢٤-٠٥-٠٦',
  ])('accepts %j', (value) => {
    expect(djangoDateTime(value)).toEqual({ kind: 'valid' })
  })

  it.each([
    ['abc', invalid('abc')],
    ['', invalid('')],
    [' 2024-05-06', invalid(' 2024-05-06')],
    ['06/05/2024', invalid('06/05/2024')],
    ['2024-02-30', invalidDate('2024-02-30')],
    ['2023-02-29', invalidDate('2023-02-29')],
    ['1900-02-29', invalidDate('1900-02-29')],
    ['0000-01-01', invalidDate('0000-01-01')],
    ['2024-13-01', invalidDate('2024-13-01')],
    ['2024-05-06T25:00', invalidDatetime('2024-05-06T25:00')],
    ['2024-05-06T07:60', invalidDatetime('2024-05-06T07:60')],
    ['2024-05-06T07:08+24:00', invalidDatetime('2024-05-06T07:08+24:00')],
  ])('refuses %j with Django\'s text', (value, message) => {
    expect(djangoDateTime(value)).toEqual({ kind: 'invalid', message })
  })

  it.each(['20240506', '2024-W19', '2024-05-06T07', '2024-05-06T24:00', '2024-05-06x07:08'])(
    'leaves %j to the CMS, whose Python version decides (fromisoformat)',
    (value) => {
      expect(djangoDateTime(value)).toEqual({ kind: 'unknown' })
    },
  )

  it('never throws and refuses only values that cannot start with a year, or that look like a date and are none', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (value) => {
        const verdict = djangoDateTime(value)
        if (verdict.kind === 'invalid') expect(verdict.message.startsWith(`“${value}” value has`)).toBe(true)
        if (!/^\p{Nd}{4}/u.test(value)) expect(verdict.kind).toBe('invalid')
      }),
      { seed: 7, numRuns: 500 },
    )
  })
})
