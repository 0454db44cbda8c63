/**
 * A memory of values worked out under one snapshot (answers by URL, forward plans by query):
 * a new snapshot forgets them, since snapshots are immutable and what was worked out under the
 * old one may no longer hold, except the values its owner's `carryOver` vouches for (answers
 * that read one page a patch did not replace). Bounded: past `maxEntries` the least recently used
 * value is forgotten (an LRU), so the hot ones stay, rather than every value at once.
 * @module
 */
import { LRUCache } from 'lru-cache'
import type { Snapshot } from './snapshot.js'

export interface SnapshotMemo<V extends NonNullable<unknown>> {
  /** The value remembered for `key` under `snapshot`; a different snapshot than last time forgets everything first. */
  get(snapshot: Snapshot, key: string): V | undefined
  /** Remembers `value` under the snapshot of the last `get`; past the bound, the least recently used goes. */
  set(key: string, value: V): V
  /** Forgets `key` (a value that no longer holds, under any snapshot). */
  delete(key: string): void
}

/**
 * Which values remembered under `previous` still hold under `next`: a test of each, or `undefined`
 * when none may be kept. Called once per change of snapshot.
 */
export type CarryOver<V> = (previous: Snapshot, next: Snapshot) => ((value: V) => boolean) | undefined

export function createSnapshotMemo<V extends NonNullable<unknown>>(maxEntries: number, carryOver?: CarryOver<V>): SnapshotMemo<V> {
  let memoFor: Snapshot | undefined
  const memo = new LRUCache<string, V>({ max: maxEntries })
  return {
    get(snapshot, key) {
      if (memoFor !== snapshot) {
        const holds = memoFor === undefined || carryOver === undefined ? undefined : carryOver(memoFor, snapshot)
        if (holds === undefined) memo.clear()
        else {
          const stale: string[] = []
          memo.forEach((value, kept) => {
            if (!holds(value)) stale.push(kept)
          })
          for (const kept of stale) memo.delete(kept)
        }
        memoFor = snapshot
      }
      return memo.get(key)
    },
    set(key, value) {
      memo.set(key, value)
      return value
    },
    delete(key) {
      memo.delete(key)
    },
  }
}

/**
 * A value per snapshot and name, worked out once: a snapshot never changes, so the value never
 * goes stale, and it is forgotten with its snapshot (a WeakMap), so no bound is needed beyond the
 * names a snapshot can have.
 */
export type PerSnapshot<V> = (snapshot: Snapshot, name: string, compute: () => V) => V

export function createPerSnapshot<V>(): PerSnapshot<V> {
  const memos = new WeakMap<Snapshot, Map<string, V>>()
  return (snapshot, name, compute) => {
    let memo = memos.get(snapshot)
    if (memo === undefined) memos.set(snapshot, (memo = new Map()))
    let value = memo.get(name)
    if (value === undefined) memo.set(name, (value = compute()))
    return value
  }
}
