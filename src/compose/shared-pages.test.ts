import { describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createSharedPages } from './shared-pages.js'

describe('pages shared between Sites\' trees', () => {
  it('a tree finds another tree\'s record of the same bytes, never its own, and nothing for other bytes', () => {
    const main = makeSnapshot([{ id: 1, parent: null }, { id: 7, parent: 1 }, { id: 8, parent: 7 }])
    const nested = makeSnapshot([{ id: 7, parent: null }, { id: 8, parent: 7 }])
    const shared = createSharedPages()
    const mainTree = () => main
    const nestedTree = () => nested
    shared.register(mainTree)
    shared.register(nestedTree)
    const record = main.byId.get(8)!
    expect(shared.twinOf(nestedTree)(8, record.digest)).toBe(record)
    expect(shared.twinOf(mainTree)(8, record.digest)).toBe(nested.byId.get(8))
    expect(shared.twinOf(mainTree)(1, main.byId.get(1)!.digest)).toBeUndefined()
    expect(shared.twinOf(nestedTree)(8, 'another digest')).toBeUndefined()
    expect(shared.twinOf(nestedTree)(99, record.digest)).toBeUndefined()
  })
})
