/**
 * The sync's state, and the one place that changes it: the snapshot served, the listing windows
 * kept for the next pass, the status, and what a failure leaves owed. Planners decide and
 * executors fetch and build without touching any of it; a sync's outcome lands here, and so does
 * a snapshot adopted from storage or received from the instance that syncs.
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import type { CmsFacts } from './cms-facts.js'
import { windowsToKeep, type ListingWindows } from './fetch-tree.js'
import { defersFull, owedAfterFailure, type SyncPlan } from './plan-sync.js'
import type { RefreshQueue } from './refresh-queue.js'
import { classifySyncError } from './sync-error.js'
import type { SnapshotSource, SyncMode, SyncResult, SyncStatus } from './sync-outcome.js'
import type { SyncedTree } from './sync-tree.js'
import type { LogSink } from '../observability/log-sink.js'

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

export interface SyncState {
  readonly current: Snapshot | undefined
  /** The last pass's listing windows and the snapshot they describe. */
  readonly windows: { readonly of: Snapshot; readonly windows: ListingWindows } | undefined
  /** The next sync is incremental even if a full one is due (`defersFull`). */
  readonly deferFull: boolean
  readonly status: Omit<SyncStatus, 'running'>
}

/** The windows a pass may take as they are: only those read for the snapshot served now. */
export function windowsFor(state: SyncState): ListingWindows | undefined {
  return state.windows !== undefined && state.windows.of === state.current ? state.windows.windows : undefined
}

export interface CommitDeps {
  readonly queue: RefreshQueue
  readonly facts: CmsFacts
  readonly logger: Pick<LogSink, 'info' | 'warn'>
  readonly now: () => number
  readonly pause: () => Promise<void>
  readonly onSnapshot?: (snapshot: Snapshot, previous: Snapshot | undefined, source: SnapshotSource) => void
}

export interface Built {
  /** The mode the sync ended in (an incremental one may have fallen back to full). */
  readonly mode: SyncMode
  readonly startedAt: number
  readonly tree: SyncedTree
  readonly candidate: Snapshot
}

export interface Failed {
  readonly plan: SyncPlan
  readonly mode: SyncMode
  readonly startedAt: number
  readonly caught: unknown
}

export interface SyncCommit {
  readonly state: SyncState
  /** A sync starts: its attempt is recorded, and a deferred full sync has been deferred once. */
  started(at: number): void
  succeeded(built: Built): Promise<SyncResult>
  /** Never throws: the last good snapshot keeps serving. */
  failed(failed: Failed): SyncResult
  /** See `SyncService.adopt`. */
  adopt(snapshot: Snapshot): boolean
  /** See `SyncService.receive`. */
  receive(snapshot: Snapshot): boolean
}

export function createSyncCommit(deps: CommitDeps): SyncCommit {
  const status: Mutable<SyncState['status']> = {
    lastAttemptAt: undefined,
    lastSuccessAt: undefined,
    lastError: undefined,
    lastErrorCode: undefined,
    consecutiveFailures: 0,
    lastMode: undefined,
  }
  const state: Mutable<SyncState> = { current: undefined, windows: undefined, deferFull: false, status }

  function swapIn(snapshot: Snapshot, source: SnapshotSource): void {
    const previous = state.current
    state.current = snapshot
    deps.facts.adopt(snapshot.dialect)
    deps.onSnapshot?.(snapshot, previous, source)
  }

  return {
    state,
    started(at) {
      status.lastAttemptAt = at
      state.deferFull = false
    },
    async succeeded({ mode, startedAt, tree, candidate }) {
      const previous = state.current
      const changed = candidate.fingerprint !== previous?.fingerprint
      // An unchanged tree keeps its snapshot (and every body rendered from it), unless a full
      // sync must record that every detail was checked.
      // Only the candidate was built from this pass's pages.
      const kept = await windowsToKeep(tree.listing, changed ? candidate : previous!, deps.pause, changed ? tree.fetched : undefined)
      if (changed) state.current = candidate
      else if (mode === 'full' && state.current) state.current = { ...state.current, fullSyncedAt: startedAt }
      state.windows = { of: state.current!, windows: kept }
      status.lastSuccessAt = deps.now()
      status.lastError = undefined
      status.lastErrorCode = undefined
      status.consecutiveFailures = 0
      status.lastMode = mode
      const durationMs = deps.now() - startedAt
      deps.logger.info(
        {
          mode, ...(tree.replaced ? { inPlace: true } : {}), pages: tree.pages.length, detailsFetched: tree.detailsFetched, removed: tree.removed,
          reasons: tree.reasons, ...(tree.urls ? { urls: tree.urls } : {}), changed, version: state.current!.version, durationMs,
        },
        'sync: done',
      )
      if (changed) deps.onSnapshot?.(candidate, previous, 'sync')
      return {
        ok: true, mode, changed, pages: tree.pages.length, detailsFetched: tree.detailsFetched,
        ...(tree.reasons ? { reasons: tree.reasons } : {}), ...(tree.urls ? { urls: tree.urls } : {}), durationMs,
      }
    },
    failed({ plan, mode, startedAt, caught }) {
      const { error, code, retryAfterMs } = classifySyncError(caught, deps.now)
      deps.queue.owe(owedAfterFailure(plan))
      status.lastError = error.message
      status.lastErrorCode = code
      if (defersFull({ plan, mode, code, hasSnapshot: state.current !== undefined, pending: deps.queue.pending })) state.deferFull = true
      status.consecutiveFailures++
      status.lastMode = mode
      const durationMs = deps.now() - startedAt
      deps.logger.warn(
        { err: error, code, mode, failures: status.consecutiveFailures, keptVersion: state.current?.version, durationMs, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
        'sync: failed; the last good snapshot keeps serving',
      )
      return { ok: false, mode, error, code, durationMs, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
    },
    adopt(snapshot) {
      if (state.current) return false
      swapIn(snapshot, 'storage')
      return true
    },
    receive(snapshot) {
      const current = state.current
      if (current && (snapshot.fingerprint === current.fingerprint || (snapshot.version <= current.version && snapshot.syncedAt <= current.syncedAt))) {
        return false
      }
      swapIn(snapshot, 'peer')
      return true
    },
  }
}
