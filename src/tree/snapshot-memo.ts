/**
 * A memory of values worked out under one snapshot (answers by URL, forward plans by query):
 * a new snapshot forgets them all, since snapshots are immutable and what was worked out under
 * the old one may no longer hold. Bounded: past `maxEntries` it starts over.
 * @module
 */
import type { Snapshot } from './snapshot.js'

export interface SnapshotMemo<V> {
  /** The value remembered for `key` under `snapshot`; a different snapshot than last time forgets everything first. */
  get(snapshot: Snapshot, key: string): V | undefined
  /** Remembers `value` under the snapshot of the last `get`. */
  set(key: string, value: V): V
  /** Forgets `key` (a value that no longer holds, under any snapshot). */
  delete(key: string): void
}

export function createSnapshotMemo<V>(maxEntries: number): SnapshotMemo<V> {
  let memoFor: Snapshot | undefined
  const memo = new Map<string, V>()
  return {
    get(snapshot, key) {
      if (memoFor !== snapshot) {
        memo.clear()
        memoFor = snapshot
      }
      return memo.get(key)
    },
    set(key, value) {
      if (memo.size >= maxEntries) memo.clear()
      memo.set(key, value)
      return value
    },
    delete(key) {
      memo.delete(key)
    },
  }
}
