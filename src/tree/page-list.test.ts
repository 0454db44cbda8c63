import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PageList, pagesArray } from './page-list.js'
import type { PageRecord } from './snapshot.js'

/** Only `id` and `order` matter to a list; the rest is filler of the right shape. */
function record(id: number, order: number): PageRecord {
  return {
    id, order, subtreeEnd: order + 1, type: 'cms.Page', title: `page ${id}`, slug: `p${id}`, showInMenus: false, seoTitle: '', searchDescription: '',
    parentId: null, listItem: `{"id": ${id}}`, typedListItem: undefined, detail: Buffer.from(`{"id": ${id}}`), digest: `d${id}`,
  }
}

const listOf = (n: number) => PageList.of(Array.from({ length: n }, (_, order) => record(order + 1, order)))

describe('PageList', () => {
  it('reads a built list as the array it was made of, and freezes that array', () => {
    const records = [record(1, 0), record(2, 1), record(3, 2)]
    const list = PageList.of(records)
    expect(list).toHaveLength(3)
    expect(list.at(0)).toBe(records[0])
    expect(list.at(-1)).toBe(records[2])
    expect(list.at(3)).toBeUndefined()
    expect([...list]).toEqual(records)
    expect(list.slice(1)).toEqual(records.slice(1))
    expect(Object.isFrozen(records)).toBe(true)
  })

  it('lays replaced records over the same array: the list it came from still reads as before', () => {
    const before = listOf(10)
    const edited = record(5, 4)
    const after = before.with(new Map([[4, edited]]))
    expect(after.at(4)).toBe(edited)
    expect(before.at(4)).not.toBe(edited)
    for (const order of [0, 3, 5, 9]) expect(after.at(order)).toBe(before.at(order))
    expect([...after].map((page) => page === edited)).toEqual([false, false, false, false, true, false, false, false, false, false])
    expect(after.slice(3, 6)).toEqual([before.at(3), edited, before.at(5)])
  })

  it('refuses a position outside the list: a patch replaces, it never adds', () => {
    const list = listOf(3)
    for (const order of [-1, 3, 1.5]) expect(() => list.with(new Map([[order, record(9, 0)]]))).toThrow(RangeError)
  })

  it('reads as an array patched the same way, whatever the patches and however often it is flattened', () => {
    const patches = fc.array(fc.array(fc.tuple(fc.nat(), fc.nat({ max: 1_000 })), { maxLength: 6 }), { maxLength: 8 })
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), patches, fc.integer({ min: 0, max: 8 }), fc.integer({ min: -50, max: 50 }), fc.integer({ min: -50, max: 50 }), (n, rounds, maxOverlay, start, end) => {
        let list = listOf(n)
        const model = list.slice()
        for (const changes of rounds) {
          const map = new Map(changes.map(([at, id]) => [at % n, record(id, at % n)] as const))
          list = list.with(map, maxOverlay)
          for (const [order, page] of map) model[order] = page
          expect(list).toHaveLength(n)
          expect([...list]).toEqual(model)
          expect(pagesArray(list)).toEqual(model)
          expect(list.slice(start, end)).toEqual(model.slice(start, end))
          for (const index of [0, n - 1, -1, -n, n, start]) expect(list.at(index)).toBe(model.at(index))
        }
      }),
    )
  })

  it('hands an array through as it is', () => {
    const records = [record(1, 0)]
    expect(pagesArray(records)).toBe(records)
  })
})
