import { describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createSnapshotMemo } from './snapshot-memo.js'

describe('snapshot memo', () => {
  const one = makeSnapshot([{ id: 1, parent: null }])
  const two = makeSnapshot([{ id: 1, parent: null }], {}, 2)

  it('answers what was remembered under the same snapshot, and forgets it all under another', () => {
    const memo = createSnapshotMemo<string>(10)
    expect(memo.get(one, 'a')).toBeUndefined()
    memo.set('a', 'planned under one')
    expect(memo.get(one, 'a')).toBe('planned under one')
    expect(memo.get(two, 'a')).toBeUndefined()
    // Going back does not bring it back: it was forgotten, not set aside.
    expect(memo.get(one, 'a')).toBeUndefined()
  })

  it('keeps its most recently read values past its bound, not starting over', () => {
    const memo = createSnapshotMemo<number>(3)
    memo.get(one, 'x')
    const readHot = () => ['hot', 'warm'].map((key) => memo.get(one, key))
    for (const [key, value] of [['hot', 1], ['warm', 2], ['cold', 3]] as const) memo.set(key, value)
    // Reading 'hot' and 'warm' makes 'cold' the least recently used.
    readHot()
    for (let index = 0; index < 10; index++) {
      memo.set(`new-${index}`, index)
      readHot()
    }
    expect(readHot()).toEqual([1, 2])
    expect(memo.get(one, 'cold')).toBeUndefined()
    // Past its bound it forgot one value at a time, the least recently used: here the older new ones.
    expect([memo.get(one, 'new-8'), memo.get(one, 'new-9')]).toEqual([undefined, 9])
  })

  it('keeps, under the next snapshot, what its owner says still holds, and only that', () => {
    const asked: Array<[number, number]> = []
    const memo = createSnapshotMemo<number>(10, (previous, next) => {
      asked.push([previous.version, next.version])
      return next === two ? (value) => value % 2 === 0 : undefined
    })
    memo.get(one, 'x')
    for (const [key, value] of [['a', 1], ['b', 2], ['c', 4]] as const) memo.set(key, value)
    expect([memo.get(two, 'a'), memo.get(two, 'b'), memo.get(two, 'c')]).toEqual([undefined, 2, 4])
    // Asked once per change of snapshot, never for the first one.
    expect(asked).toEqual([[1, 2]])
    // An owner that vouches for nothing: everything goes.
    expect(memo.get(one, 'b')).toBeUndefined()
    expect(asked).toEqual([[1, 2], [2, 1]])
  })

  it('forgets one key on request, keeping the others', () => {
    const memo = createSnapshotMemo<number>(10)
    memo.get(one, 'x')
    memo.set('a', 1)
    memo.set('b', 2)
    memo.delete('a')
    expect([memo.get(one, 'a'), memo.get(one, 'b')]).toEqual([undefined, 2])
  })
})
