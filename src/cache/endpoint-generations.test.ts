import { describe, expect, it } from 'vitest'
import { createEndpointGenerations, FIRST_GENERATION } from './endpoint-generations.js'

describe('endpoint generations', () => {
  it('start at the first generation alone, and each renewal names a new one', () => {
    let now = 1_000
    const generations = createEndpointGenerations({ now: () => now, random: () => 0.5 })
    expect(generations.of('images')).toBe(FIRST_GENERATION)
    const first = generations.renew('images')
    now += 1
    const second = generations.renew('images')
    expect(new Set([FIRST_GENERATION, first, second]).size).toBe(3)
    expect(generations.of('images')).toBe(second)
    expect(generations.of('documents')).toBe(FIRST_GENERATION)
  })

  it('shared, start unsettled: neither the first generation nor another instance\'s, until settled or adopted', () => {
    const a = createEndpointGenerations({ now: () => 5, random: () => 0.1, shared: true })
    const b = createEndpointGenerations({ now: () => 5, random: () => 0.9, shared: true })
    expect(a.of('images')).not.toBe(FIRST_GENERATION)
    expect(a.of('images')).not.toBe(b.of('images'))
    a.settle('images', undefined)
    expect(a.of('images')).toBe(FIRST_GENERATION)
    b.settle('images', 'k2')
    expect(b.of('images')).toBe('k2')
  })

  it('keep a generation adopted or renewed before the recorded one was read', () => {
    const generations = createEndpointGenerations({ now: () => 5, random: () => 0.1, shared: true })
    generations.adopt('images', 'newer')
    generations.settle('images', 'older')
    expect(generations.of('images')).toBe('newer')
    const renewed = generations.renew('documents')
    generations.settle('documents', undefined)
    expect(generations.of('documents')).toBe(renewed)
  })
})
