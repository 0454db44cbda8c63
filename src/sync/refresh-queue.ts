/**
 * What PURGE and webhook requests asked of the sync since it last started. Requests arriving
 * close together pile up here and one sync takes them all (`take`); a sync that fails gives back
 * what it still owes (`owe`), so the retry fetches it.
 *
 * The ids are gathered in one Set mutated in place: a burst of PURGEs (one per URL, one per alias)
 * must cost one insertion each, not a copy of everything asked so far.
 * @module
 */
import type { RefreshRequest } from './refresh-request.js'

export interface PendingRefresh {
  /** Pages named, to fetch again even if their listing item did not change. */
  readonly ids: ReadonlySet<number>
  /** Some request asked for a full sync. */
  readonly all: boolean
  /** Some request arrived: the sync that takes them counts as refresh traffic. */
  readonly any: boolean
  /** Some request asked for a listing pass (or named no page, which needs one). */
  readonly listing: boolean
}

/** What a failed sync hands back; `any` is not: the retry is the schedule's, not a refresh. */
export type OwedRefresh = Pick<PendingRefresh, 'ids' | 'all' | 'listing'>

export interface RefreshQueue {
  /** What is asked now, without taking it. */
  readonly pending: PendingRefresh
  add(request: RefreshRequest): void
  /** Everything asked so far; the queue starts empty again. */
  take(): PendingRefresh
  owe(owed: OwedRefresh): void
}

export function createRefreshQueue(): RefreshQueue {
  let ids = new Set<number>()
  let all = false
  let any = false
  let listing = false
  return {
    get pending() {
      return { ids, all, any, listing }
    },
    add(request) {
      for (const id of request.ids ?? []) ids.add(id)
      if (request.all) all = true
      // Without ids there is nothing to refresh in place: only a listing pass can tell what changed.
      if (request.listing || !request.ids?.length) listing = true
      any = true
    },
    take() {
      const taken = { ids, all, any, listing }
      ids = new Set()
      all = false
      any = false
      listing = false
      return taken
    },
    owe(owed) {
      for (const id of owed.ids) ids.add(id)
      if (owed.all) all = true
      if (owed.listing) listing = true
    },
  }
}
