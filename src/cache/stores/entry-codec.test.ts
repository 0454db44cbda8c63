import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeEntry, encodeEntry } from './entry-codec.js'

describe('entry codec', () => {
  it('round-trips any value, storedAt and meta', () => {
    const meta = fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()))
    fc.assert(
      fc.property(fc.uint8Array(), fc.integer({ min: 0, max: 2 ** 47 }), fc.option(meta, { nil: undefined }), (bytes, storedAt, meta) => {
        const entry = { value: Buffer.from(bytes), storedAt, ...(meta ? { meta } : {}) }
        const decoded = decodeEntry(encodeEntry(entry))
        const expected = meta && Object.keys(meta).length > 0 ? { value: entry.value, storedAt, meta: JSON.parse(JSON.stringify(meta)) } : { value: entry.value, storedAt }
        expect(decoded).toEqual(expected)
      }),
    )
  })

  it('refuses bytes that are not an entry', () => {
    const good = encodeEntry({ value: Buffer.from('body'), storedAt: 1, meta: { status: 200 } })
    expect(decodeEntry(Buffer.from('plain string'))).toHaveProperty('invalid')
    expect(decodeEntry(good.subarray(0, 5))).toHaveProperty('invalid')
    expect(decodeEntry(Buffer.concat([Buffer.from([0xc5, 2]), good.subarray(2)]))).toHaveProperty('invalid')
    const truncatedMeta = Buffer.from(good)
    truncatedMeta.writeUInt32BE(1000, 10)
    expect(decodeEntry(truncatedMeta)).toHaveProperty('invalid')
    const nestedMeta = Buffer.concat([good.subarray(0, 10), Buffer.from([0, 0, 0, 10]), Buffer.from('{"a":[1]} body')])
    expect(decodeEntry(nestedMeta)).toHaveProperty('invalid')
  })
})
