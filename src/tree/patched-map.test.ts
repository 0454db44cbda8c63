import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { patchMap, PatchedMap, type Lookup } from './patched-map.js'
import { runToEnd } from './slices.js'

const entries = (map: Lookup<number, string>, keys: readonly number[]) => keys.map((key) => [key, map.get(key), map.has(key)])

describe('patchMap: a map with some values replaced, costing what changed', () => {
  it('reads as a copy of the map with the changes written in, patch after patch, flat or layered (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 60 }),
        fc.array(fc.array(fc.tuple(fc.nat(), fc.string({ maxLength: 3 })), { maxLength: 8 }), { maxLength: 8 }),
        fc.integer({ min: 0, max: 12 }),
        (keys, rounds, maxOverlay) => {
          const expected = new Map(keys.map((key) => [key, `v${key}`]))
          let map: Lookup<number, string> = new Map(expected)
          for (const round of rounds) {
            const changes = new Map(round.map(([pick, value]) => [keys[pick % keys.length]!, value]))
            map = runToEnd(patchMap(map, changes, maxOverlay))
            for (const [key, value] of changes) expected.set(key, value)
            expect(map.size).toBe(expected.size)
            expect(entries(map, [...keys, -1, 201])).toEqual(entries(expected, [...keys, -1, 201]))
            // Never a layer over a layer: at most two reads per lookup.
            if (map instanceof PatchedMap) expect(map.base).toBeInstanceOf(Map)
          }
          expect(new Map(map as Map<number, string> | PatchedMap<number, string>)).toEqual(expected)
        },
      ),
    )
  })

  it('leaves the map it patched as it was: readers of the older snapshot see it unchanged', () => {
    const base = new Map([[1, 'a'], [2, 'b']])
    const once = runToEnd(patchMap(base, new Map([[1, 'A']])))
    const twice = runToEnd(patchMap(once, new Map([[2, 'B']])))
    expect(entries(base, [1, 2])).toEqual([[1, 'a', true], [2, 'b', true]])
    expect(entries(once, [1, 2])).toEqual([[1, 'A', true], [2, 'b', true]])
    expect(entries(twice, [1, 2])).toEqual([[1, 'A', true], [2, 'B', true]])
  })

  it('keeps the base map and its order; past the overlay limit writes one flat map in base order', () => {
    const base = new Map([[3, 'c'], [1, 'a'], [2, 'b']])
    const layered = runToEnd(patchMap(base, new Map([[1, 'A']]), 1))
    expect(layered).toBeInstanceOf(PatchedMap)
    expect((layered as PatchedMap<number, string>).base).toBe(base)
    expect([...(layered as PatchedMap<number, string>)]).toEqual([[3, 'c'], [1, 'A'], [2, 'b']])
    const flat = runToEnd(patchMap(layered, new Map([[2, 'B']]), 1))
    expect(flat).toBeInstanceOf(Map)
    expect([...(flat as Map<number, string>)]).toEqual([[3, 'c'], [1, 'A'], [2, 'B']])
  })

  it('refuses a key the map does not have: a patch never adds pages', () => {
    expect(() => runToEnd(patchMap(new Map([[1, 'a']]), new Map([[2, 'b']])))).toThrow(TypeError)
  })
})
