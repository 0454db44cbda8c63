import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createRequestIds } from './request-id.js'

const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('request ids', () => {
  it('keeps a caller id that looks like one', () => {
    const ids = createRequestIds()
    expect(ids('checkout-7f3a:retry.2')).toBe('checkout-7f3a:retry.2')
  })

  it('replaces a caller id that is empty, too long, repeated or holds characters a log viewer could misread', () => {
    const ids = createRequestIds()
    for (const header of ['', 'x'.repeat(129), ['a', 'b'], 'two words', 'line\nbreak', '<script>']) {
      expect(ids(header)).toMatch(UUID_V8)
    }
  })

  it('gives out UUID-shaped ids (version 8, RFC 9562 variant) for any random prefix', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 10, maxLength: 10 }), fc.nat({ max: 2 ** 48 - 2 }), (bytes, first) => {
        const ids = createRequestIds(() => Buffer.from(bytes), first)
        const a = ids(undefined)
        const b = ids(undefined)
        expect(a).toMatch(UUID_V8)
        expect(b).toMatch(UUID_V8)
        // Same prefix, next counter value: unique within the process, in order.
        expect(a.slice(0, 24)).toBe(b.slice(0, 24))
        expect(parseInt(b.slice(24), 16)).toBe(parseInt(a.slice(24), 16) + 1)
        expect(b > a).toBe(true)
      }),
    )
  })

  it('tells processes apart by their random prefix', () => {
    const one = createRequestIds(() => Buffer.from('00112233445566778899', 'hex'))
    const two = createRequestIds(() => Buffer.from('8899aabbccddeeff0011', 'hex'))
    expect(one(undefined)).toBe('00112233-4455-8667-b889-000000000000')
    expect(two(undefined)).toBe('8899aabb-ccdd-8eef-b001-000000000000')
  })

  it('draws a new prefix when the 48-bit counter runs out, so no id repeats', () => {
    const draws = [Buffer.from('00112233445566778899', 'hex'), Buffer.from('8899aabbccddeeff0011', 'hex')]
    const ids = createRequestIds(() => draws.shift()!, 2 ** 48 - 1)
    expect(ids(undefined)).toBe('00112233-4455-8667-b889-ffffffffffff')
    expect(ids(undefined)).toBe('8899aabb-ccdd-8eef-b001-000000000000')
  })
})
