/**
 * What a failed sync's error means for the service: its code for logs, `/readyz` and metrics
 * (the catalogue in `errors.ts`), how long the CMS asked to be left alone, and whether the CMS
 * refused the page size. Pure.
 * @module
 */
import { isProxyError } from '../errors.js'
import { TreeInconsistentError } from '../tree/build-snapshot.js'
import { parseRetryAfter } from '../upstream/retry-policy.js'

export interface SyncFailure {
  readonly error: Error
  /** The catalogue's code; `SYNC_FAILED` for an error that has none. */
  readonly code: string
  /** The wait the CMS asked for with its `Retry-After` (RFC 9110 §10.2.3), in ms. */
  readonly retryAfterMs: number | undefined
}

export function classifySyncError(caught: unknown, now: () => number): SyncFailure {
  const error = caught instanceof Error ? caught : new Error(String(caught))
  const code = isProxyError(error) ? error.code : error instanceof TreeInconsistentError ? 'SYNC_INCONSISTENT' : 'SYNC_FAILED'
  return { error, code, retryAfterMs: askedToWait(error, now) }
}

/** `badStatusError` carries the CMS's `Retry-After` along in its details. */
function askedToWait(error: Error, now: () => number): number | undefined {
  if (!isProxyError(error, 'UPSTREAM_BAD_STATUS')) return undefined
  return parseRetryAfter(error.details?.['retryAfter'] as string | string[] | undefined, now)
}

/** A 400 to a listing: the CMS's WAGTAILAPI_LIMIT_MAX went down since the page size was probed. */
export function isPageSizeRefusal(error: unknown): boolean {
  return isProxyError(error, 'UPSTREAM_BAD_STATUS') && (error.details as { status?: number } | undefined)?.status === 400
}
