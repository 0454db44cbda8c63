import { describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { createVerifyLedger } from './verify-ledger.js'

const tree = () => makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }, { id: 3, parent: 1 }, { id: 4, parent: 1 }])
const at = (snapshot: Snapshot, syncedAt: number, fullSyncedAt: number): Snapshot => ({ ...snapshot, syncedAt, fullSyncedAt })

describe('the verification ledger', () => {
  it('starts every page at the full sync that read it, and puts a page verified again last', () => {
    const ledger = createVerifyLedger()
    ledger.track(at(tree(), 100, 100))
    expect([...ledger.entries()]).toEqual([[1, 100], [2, 100], [3, 100], [4, 100]])
    ledger.verified([2], 500)
    expect([...ledger.entries()].map(([id]) => id)).toEqual([1, 3, 4, 2])
    expect(ledger.oldest(() => true)).toBe(100)
  })

  it('counts a page a sync or refresh read again as verified then, and a new page as read by the sync that found it', () => {
    const ledger = createVerifyLedger()
    const base = tree()
    // Page 2's content as the first snapshot held it differs from the one served now.
    const first: Snapshot = { ...at(base, 100, 100), byId: new Map([...base.pages].map((page) => [page.id, page.id === 2 ? { ...page, digest: 'older' } : page])) }
    ledger.track(first)
    const refreshed = at(makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }, { id: 3, parent: 1 }, { id: 4, parent: 1 }, { id: 5, parent: 1 }]), 700, 100)
    ledger.track(refreshed, first)
    expect([...ledger.entries()]).toEqual([[1, 100], [3, 100], [4, 100], [2, 700], [5, 700]])
  })

  it('starts over at a later full sync, keeping pages verified after it where they are', () => {
    const ledger = createVerifyLedger()
    ledger.track(at(tree(), 100, 100))
    ledger.verified([3], 900)
    ledger.track(at(tree(), 800, 800))
    expect([...ledger.entries()]).toEqual([[1, 800], [2, 800], [4, 800], [3, 900]])
  })

  it('forgets pages, and says when the oldest page still held was verified', () => {
    const ledger = createVerifyLedger()
    ledger.track(at(tree(), 100, 100))
    ledger.verified([1], 200)
    ledger.forget([2])
    expect(ledger.oldest((id) => id !== 3)).toBe(100)
    expect(ledger.oldest((id) => id === 1)).toBe(200)
  })
})
