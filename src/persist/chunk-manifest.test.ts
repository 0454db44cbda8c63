import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeManifest, encodeManifest, isChunkManifest, manifestLength, type ChunkManifest } from './chunk-manifest.js'
import { readSnapshotMetadata } from './snapshot-codec.js'

const digestOf = (text: string) => createHash('sha256').update(text).digest('base64url')

const manifestArb = fc
  .array(fc.record({ digest: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('base64url')), length: fc.nat(0xffff_ffff) }), { maxLength: 40 })
  .map((chunks): ChunkManifest => ({ chunks, totalLength: chunks.reduce((sum, chunk) => sum + chunk.length, 0) }))

const sample: ChunkManifest = { totalLength: 30, chunks: [{ digest: digestOf('a'), length: 10 }, { digest: digestOf('b'), length: 20 }] }

describe('chunk manifest', () => {
  it('decodes to what was encoded, whatever the chunks (property)', () => {
    fc.assert(
      fc.property(manifestArb, (manifest) => {
        const buf = encodeManifest(manifest)
        expect(isChunkManifest(buf)).toBe(true)
        expect(manifestLength(buf)).toBe(buf.length)
        expect(decodeManifest(buf)).toEqual({ ok: true, manifest })
      }),
    )
  })

  it('tells its length from its header alone', () => {
    const buf = encodeManifest(sample)
    expect(manifestLength(buf.subarray(0, 20))).toBe(buf.length)
    expect(manifestLength(buf.subarray(0, 19))).toBeUndefined()
    expect(manifestLength(Buffer.from('CMSSHLD\u0004 a whole snapshot', 'latin1'))).toBeUndefined()
  })

  it('refuses every truncation and any extra byte, without throwing', () => {
    const buf = encodeManifest(sample)
    for (let length = 0; length < buf.length; length++) {
      const result = decodeManifest(buf.subarray(0, length))
      expect(result.ok).toBe(false)
    }
    expect(decodeManifest(Buffer.concat([buf, Buffer.from([0])]))).toMatchObject({ ok: false, reason: expect.stringContaining('not 92') })
  })

  it('refuses a garbled manifest, never throwing (property)', () => {
    const buf = encodeManifest(sample)
    fc.assert(
      fc.property(fc.nat(buf.length - 1), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const garbled = Buffer.from(buf)
        garbled[at]! ^= flip
        const result = decodeManifest(garbled)
        // A flipped digest byte is still a manifest (the chunk's own digest check refuses it); anything else is refused.
        if (result.ok) expect(at >= 20 && (at - 20) % 36 < 32).toBe(true)
      }),
    )
    expect(decodeManifest(Buffer.from('CMSSHLD whole snapshot', 'latin1'))).toMatchObject({ ok: false, reason: 'not a chunk manifest (no CMSCHNK magic)' })
    const otherVersion = Buffer.from(buf)
    otherVersion[7] = 9
    expect(decodeManifest(otherVersion)).toMatchObject({ ok: false, reason: 'chunk manifest version 9; this build reads version 1' })
    const badTotal = Buffer.from(buf)
    badTotal.writeBigUInt64BE(31n, 8)
    expect(decodeManifest(badTotal)).toMatchObject({ ok: false, reason: "chunk manifest's chunks add up to 30 bytes, not 31" })
  })

  it('is refused by the snapshot codec: an earlier build reads it as "not a cms-shield snapshot"', () => {
    expect(readSnapshotMetadata(encodeManifest(sample))).toMatchObject({ ok: false, reason: expect.stringContaining('not a cms-shield snapshot') })
  })

  it('refuses to encode a digest that is not a SHA-256, or lengths that do not add up', () => {
    expect(() => encodeManifest({ totalLength: 1, chunks: [{ digest: 'short', length: 1 }] })).toThrow(RangeError)
    expect(() => encodeManifest({ totalLength: 11, chunks: [{ digest: digestOf('a'), length: 10 }] })).toThrow(RangeError)
  })
})
