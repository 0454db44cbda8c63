/**
 * The sync's decisions, apart from the I/O that carries them out (`fetch-sync.ts`,
 * `build-candidate.ts`) and the state they change (`commit-sync.ts`): what kind of sync to run,
 * how to turn what it fetched into a snapshot, when to read everything after all, and what a
 * failed sync leaves owed. Pure: no I/O, no clock, no state.
 * @module
 */
import { TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import type { Dialect, Snapshot } from '../tree/snapshot.js'
import type { PendingRefresh, OwedRefresh } from './refresh-queue.js'
import type { SyncMode } from './sync-outcome.js'
import type { SyncedTree } from './sync-tree.js'

export interface SyncPlanInput {
  /** `syncNow({ full: true })`: an operator or a test asked for a full sync. */
  readonly requestedFull: boolean
  /** What refresh requests asked since the last sync started (`RefreshQueue.take`). */
  readonly asked: PendingRefresh
  /** The snapshot served now, if any. */
  readonly previous: Snapshot | undefined
  readonly now: number
  /** `FULL_SYNC_INTERVAL` (infinite when off). */
  readonly fullIntervalMs: number
  /** The last sync was a full one that met an edit in progress: this one stays incremental. */
  readonly deferFull: boolean
}

export interface SyncPlan {
  readonly mode: SyncMode
  readonly requestedFull: boolean
  /** Pages a PURGE or the webhook named. */
  readonly requested: ReadonlySet<number>
  /** Only PURGEs of known pages asked: try refreshing them without a listing pass (`refresh-in-place.ts`). */
  readonly inPlace: boolean
  /** A refresh request asked for a listing pass. */
  readonly requestedListing: boolean
  /** What the sync's CMS requests count as in metrics: a PURGE or webhook's refresh, or the schedule's. */
  readonly trafficClass: 'sync' | 'refresh'
}

export function planSync(input: SyncPlanInput): SyncPlan {
  const { asked, previous } = input
  // Body-only edits show in no listing: every FULL_SYNC_INTERVAL every detail is read again.
  const fullDue = input.now - (previous?.fullSyncedAt ?? 0) >= input.fullIntervalMs && !input.deferFull
  const full = input.requestedFull || asked.all || previous === undefined || fullDue
  return {
    mode: full ? 'full' : 'incremental',
    requestedFull: input.requestedFull,
    requested: asked.ids,
    inPlace: asked.any && !asked.listing,
    requestedListing: asked.listing,
    trafficClass: asked.any ? 'refresh' : 'sync',
  }
}

/** How the fetched tree becomes the candidate snapshot. */
export type BuildStep =
  /** Nothing the CMS showed differs from `snapshot`: it is the candidate as it is. */
  | { readonly kind: 'keep'; readonly snapshot: Snapshot }
  /** Pages refreshed in place keep their places: swap their records into `previous`, build no tree. */
  | { readonly kind: 'patch'; readonly previous: Snapshot; readonly replaced: ReadonlyMap<number, SyncedPage> }
  /** Build the tree from every page; `full` records that every detail was read. */
  | { readonly kind: 'build'; readonly full: boolean }

export function planBuild(tree: Pick<SyncedTree, 'unchanged' | 'replaced'>, previous: Snapshot | undefined, dialect: Dialect, mode: SyncMode): BuildStep {
  // At 100,000 pages a build that proves the tree the same costs most of a listing pass's CPU, for
  // every periodic pass and PURGE; a CMS that now speaks another dialect changes every snapshot.
  if (tree.unchanged && previous !== undefined && sameDialect(previous.dialect, dialect)) return { kind: 'keep', snapshot: previous }
  if (tree.replaced !== undefined && previous !== undefined) return { kind: 'patch', previous, replaced: tree.replaced }
  return { kind: 'build', full: mode === 'full' }
}

function sameDialect(a: Dialect, b: Dialect): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/**
 * Whether a failed build of an incremental sync is retried as a full one: parent links carried
 * over from the last snapshot that no longer form a tree mean the listing did not show some change
 * (a move of a page without a URL), and only reading everything settles it.
 */
export function fallsBackToFull(mode: SyncMode, error: unknown): boolean {
  return mode === 'incremental' && error instanceof TreeInconsistentError
}

/** What a failed sync still owes: the retry fetches it. */
export function owedAfterFailure(plan: SyncPlan): OwedRefresh {
  return {
    ids: plan.requested,
    all: plan.requestedFull,
    // A refresh in place that failed is retried with a listing pass, which settles any doubt.
    listing: plan.requestedListing || plan.inPlace,
  }
}

export interface FailedSync {
  readonly plan: SyncPlan
  /** The mode the sync ended in (an incremental one may have fallen back to full). */
  readonly mode: SyncMode
  readonly code: string
  readonly hasSnapshot: boolean
  /** What is owed now, failed sync's debts included: a full sync asked for cannot be deferred. */
  readonly pending: Pick<PendingRefresh, 'all'>
}

/**
 * A full sync that met an edit in progress (a page changed between its listing and its detail)
 * would meet the next one too while editors work: the retry is incremental, so edits keep
 * arriving, and the full sync is tried again at the next interval.
 */
export function defersFull(failed: FailedSync): boolean {
  return failed.mode === 'full' && failed.hasSnapshot && failed.code === 'SYNC_INCONSISTENT' && !failed.plan.requestedFull && !failed.pending.all
}
