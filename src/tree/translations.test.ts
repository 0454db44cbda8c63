import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TranslationGroups } from './translations.js'

describe('TranslationGroups', () => {
  it('joins lists that share a page into one group, and keeps no group of one page', () => {
    const groups = TranslationGroups.of([[9, 3], [5], [3, 12], [7, 8]])
    expect(groups.groups).toEqual([[3, 9, 12], [7, 8]])
    expect(groups.translationsOf(9)).toEqual([3, 12])
    expect(groups.translationsOf(5)).toEqual([])
    expect(groups.isTranslation(3, 12)).toBe(true)
    expect(groups.isTranslation(3, 3)).toBe(false)
    expect(groups.isTranslation(3, 7)).toBe(false)
    expect(groups.isTranslation(5, 6)).toBe(false)
  })

  it('drops pages no longer on the Site, and is itself when none is dropped', () => {
    const groups = TranslationGroups.of([[1, 2, 3], [4, 5]])
    expect(groups.restrictedTo(() => true)).toBe(groups)
    expect(groups.restrictedTo((id) => id !== 2 && id !== 5).groups).toEqual([[1, 3]])
  })

  it('puts two pages in one group exactly when a chain of lists links them', () => {
    const lists = fc.array(fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 4 }), { maxLength: 12 })
    fc.assert(fc.property(lists, fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 30 }), (input, a, b) => {
      // Reachability by brute force: repeat joining until nothing changes.
      const reach = new Map<number, Set<number>>()
      for (const list of input) {
        for (const id of list) {
          const set = reach.get(id) ?? new Set<number>()
          for (const other of list) set.add(other)
          reach.set(id, set)
        }
      }
      for (let changed = true; changed;) {
        changed = false
        for (const set of reach.values()) {
          for (const id of [...set]) {
            for (const other of reach.get(id)!) {
              if (!set.has(other)) {
                set.add(other)
                changed = true
              }
            }
          }
        }
      }
      const expected = a !== b && (reach.get(a)?.has(b) ?? false)
      expect(TranslationGroups.of(input).isTranslation(a, b)).toBe(expected)
    }))
  })
})
