import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatBytes, parseBytes } from './bytes.js'

describe('parseBytes', () => {
  it.each([
    ['512kb', 524_288],
    ['64mb', 67_108_864],
    ['64MB', 67_108_864],
    ['64MiB', 67_108_864],
    ['1gb', 1_073_741_824],
    ['1.5kb', 1_536],
    ['100b', 100],
    ['1000', 1_000],
    ['0', 0],
  ])('reads %j as %i bytes', (text, bytes) => {
    expect(parseBytes(text)).toBe(bytes)
  })

  it.each(['', '-1', '1tb', 'mb', '1e6', '64 m', 'ten'])('rejects %j', (text) => {
    expect(parseBytes(text)).toBeUndefined()
  })

  it('never throws on arbitrary input', () => {
    fc.assert(fc.property(fc.string(), (text) => {
      const result = parseBytes(text)
      expect(result === undefined || Number.isSafeInteger(result)).toBe(true)
    }))
  })

  it('round-trips through formatBytes', () => {
    fc.assert(fc.property(fc.maxSafeNat(), (bytes) => {
      expect(parseBytes(formatBytes(bytes))).toBe(bytes)
    }))
    expect(formatBytes(67_108_864)).toBe('64mb')
  })
})
