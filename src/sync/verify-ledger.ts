/**
 * When each page's detail was last read from the CMS, oldest first: the order the rolling
 * verification walks (`plan-net.ts`). A Map keeps insertion order, so a page verified again is
 * taken out and put at the end, and the first entry is always the oldest.
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'

export interface VerifyLedger {
  /** Page ids with the time each was verified, oldest first. */
  entries(): IterableIterator<[number, number]>
  /**
   * Takes in the snapshot served: a full sync read every detail (all at `fullSyncedAt`); pages new
   * to the ledger, and pages whose content differs from `previous`'s, were read by the sync or
   * refresh that made it (at `syncedAt`), and are not read again before their turn comes round.
   */
  track(snapshot: Snapshot, previous?: Snapshot): void
  verified(ids: readonly number[], at: number): void
  forget(ids: readonly number[]): void
  /** When the least recently verified page the snapshot holds was verified. */
  oldest(holds: (id: number) => boolean): number | undefined
}

export function createVerifyLedger(): VerifyLedger {
  let times = new Map<number, number>()
  let fullSyncedAt: number | undefined
  return {
    entries: () => times.entries(),
    track(snapshot, previous) {
      if (snapshot.fullSyncedAt !== fullSyncedAt && snapshot.fullSyncedAt > (fullSyncedAt ?? Number.NEGATIVE_INFINITY)) {
        fullSyncedAt = snapshot.fullSyncedAt
        // Every page was read then, or since (those keep their later time, at the end).
        const later = [...times].filter(([, at]) => at > snapshot.fullSyncedAt)
        times = new Map()
        for (const page of snapshot.pages) times.set(page.id, snapshot.fullSyncedAt)
        for (const [id, at] of later) {
          times.delete(id)
          times.set(id, at)
        }
        return
      }
      for (const page of snapshot.pages) {
        if (!times.has(page.id)) times.set(page.id, snapshot.syncedAt)
        else if (previous !== undefined && previous.byId.get(page.id)?.digest !== page.digest) {
          times.delete(page.id)
          times.set(page.id, snapshot.syncedAt)
        }
      }
    },
    verified(ids, at) {
      for (const id of ids) {
        times.delete(id)
        times.set(id, at)
      }
    },
    forget(ids) {
      for (const id of ids) times.delete(id)
    },
    oldest(holds) {
      for (const [id, at] of times) if (holds(id)) return at
      return undefined
    },
  }
}
