import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ByteSlabs, bytesCopier, SLAB_BYTES } from './byte-slabs.js'

describe('ByteSlabs', () => {
  it('gives every text back as its exact UTF-8 bytes, whatever came before it in the slab', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 3_000 }), { maxLength: 60 }), (texts) => {
        const slabs = new ByteSlabs()
        const copies = texts.map((text) => slabs.copy(text))
        copies.forEach((copy, i) => expect(copy.equals(Buffer.from(texts[i]!, 'utf8'))).toBe(true))
      }),
    )
  })

  it('packs small copies into one slab and starts a new one when the next does not fit', () => {
    const slabs = new ByteSlabs()
    const text = 'ä'.repeat(4_000) // 8,000 bytes
    const first = slabs.copy(text)
    const second = slabs.copy(text)
    expect(second.buffer).toBe(first.buffer)
    expect(first.buffer.byteLength).toBe(SLAB_BYTES)
    const perSlab = Math.floor(SLAB_BYTES / 8_000)
    const rest = Array.from({ length: perSlab - 1 }, () => slabs.copy(text))
    expect(rest.at(-2)!.buffer).toBe(first.buffer)
    expect(rest.at(-1)!.buffer).not.toBe(first.buffer)
  })

  it('gives a copy larger than a sixteenth of a slab a buffer of its own', () => {
    const slabs = new ByteSlabs()
    const large = slabs.copy('x'.repeat(SLAB_BYTES / 16 + 1))
    expect(large.buffer.byteLength).toBe(SLAB_BYTES / 16 + 1)
  })
})

describe('bytesCopier', () => {
  it('copies a small batch one buffer per text, so one kept page never holds a slab', () => {
    const copy = bytesCopier(1)
    const bytes = copy('{"id": 1}')
    expect(bytes.toString('utf8')).toBe('{"id": 1}')
    expect(bytes.buffer.byteLength).toBe(bytes.length)
  })

  it('packs a large batch into shared slabs', () => {
    const copy = bytesCopier(100_000)
    const a = copy('{"id": 1}')
    const b = copy('{"id": 2}')
    expect(b.buffer).toBe(a.buffer)
    expect([a.toString('utf8'), b.toString('utf8')]).toEqual(['{"id": 1}', '{"id": 2}'])
  })
})
