/**
 * What a sync reports: the result of one attempt, and the status `/readyz` and the metrics read.
 * Types only, so the planners, the commit and the service share them without importing each other.
 * @module
 */
import type { RefreshReason } from './plan-refresh.js'

export type SnapshotSource = 'sync' | 'storage' | 'peer'

export type SyncMode = 'full' | 'incremental'

export type SyncResult =
  | {
    readonly ok: true
    readonly mode: SyncMode
    readonly changed: boolean
    readonly pages: number
    /** Details fetched: every page on a full sync, the changed ones on an incremental one. */
    readonly detailsFetched: number
    readonly reasons?: Readonly<Record<RefreshReason, number>>
    /**
     * A walk that could derive `html_url` (SYNC_DERIVE_URLS, `walk-without-urls.ts`): `derived`, or
     * `read` when it read the listing with it after all (a page it could not place, too many anchors).
     */
    readonly urls?: 'derived' | 'read'
    readonly durationMs: number
  }
  | {
    readonly ok: false
    readonly mode: SyncMode
    readonly error: Error
    /** The error catalogue's code (`SYNC_FAILED` for an error that has none). */
    readonly code: string
    readonly durationMs: number
    /** How long the CMS asked to be left alone (its `Retry-After`), in ms; absent when it did not say. */
    readonly retryAfterMs?: number
    /** A paced listing walk cut short for a refresh: nothing failed, and the walk is owed again. */
    readonly preempted?: true
  }

export interface SyncStatus {
  readonly lastAttemptAt: number | undefined
  readonly lastSuccessAt: number | undefined
  readonly lastError: string | undefined
  /** The last failure's code (see `errors.ts`); `undefined` after a success. */
  readonly lastErrorCode?: string | undefined
  readonly consecutiveFailures: number
  readonly running: boolean
  readonly lastMode: SyncMode | undefined
}
