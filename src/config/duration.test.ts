import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatDuration, parseDuration } from './duration.js'

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['1h 30m', 5_400_000],
    ['1m30s500ms', 90_500],
    ['1.5s', 1_500],
    ['0s', 0],
    ['0', 0],
    ['60', 60_000],
    ['1.5', 1_500],
    [' 10s ', 10_000],
  ])('reads %j as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms)
  })

  it('treats a bare number as seconds', () => {
    expect(parseDuration('90')).toBe(parseDuration('90s'))
  })

  it.each(['', '   ', '-5s', '-5', '+5s', '5x', 's', '1.s', '.5s', '5 s', '1h1h', '30m1h', '1e3', 'NaN', 'Infinity', '10S', '1h-30m', '0x10'])(
    'rejects %j',
    (text) => {
      expect(parseDuration(text)).toBeUndefined()
    },
  )

  it('rejects values beyond the safe integer range', () => {
    expect(parseDuration('99999999999999999999h')).toBeUndefined()
  })

  it('never throws on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const result = parseDuration(text)
        expect(result === undefined || (Number.isSafeInteger(result) && result >= 0)).toBe(true)
      }),
      { numRuns: 500 },
    )
  })

  it('never throws on input made of duration characters', () => {
    const alphabet = fc.constantFrom(...'0123456789.hms -+'.split(''))
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 20 }), (text) => {
        const result = parseDuration(text)
        expect(result === undefined || result >= 0).toBe(true)
      }),
      { numRuns: 2_000 },
    )
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [250, '250ms'],
    [1_500, '1s500ms'],
    [60_000, '1m'],
    [90_000, '1m30s'],
    [5_400_000, '1h30m'],
    [86_400_000, '24h'],
  ])('writes %i ms as %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
  })

  it('round-trips through parseDuration for every whole number of ms', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms)
      }),
      { numRuns: 5_000 },
    )
  })

  it('round-trips just below whole hours near 2^53', () => {
    const ms = Math.floor(Number.MAX_SAFE_INTEGER / 3_600_000) * 3_600_000 - 1
    expect(parseDuration(formatDuration(ms))).toBe(ms)
  })

  it('refuses negative and non-finite input', () => {
    expect(() => formatDuration(-1)).toThrow(RangeError)
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError)
  })
})
