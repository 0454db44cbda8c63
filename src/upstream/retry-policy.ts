/**
 * When a failed GET to the CMS is worth another attempt, and how long to wait first. Pure.
 *
 * Only idempotent GETs are retried, and only on failures that a second attempt can plausibly
 * fix: the network, a timeout, a gateway in front of the CMS (502/503/504) and rate limiting
 * (429). A Wagtail 500 is deterministic for the same input (e.g. `find/?id=abc`), and a 4xx is
 * the answer, so both are returned at once.
 * @module
 */

import { fullJitterDelay } from '../backoff.js'
import { isProxyError } from '../errors.js'

export const BACKOFF_BASE_MS = 100
export const BACKOFF_CAP_MS = 2_000
/**
 * The longest `Retry-After` we wait for inside one request. A longer one means "not now": waiting
 * would hold a sync or a reader far past UPSTREAM_TIMEOUT, so the response goes to the caller,
 * whose own backoff (sync) or stale copy (read-through) is the right answer.
 */
export const RETRY_AFTER_MAX_MS = BACKOFF_CAP_MS

const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504])

/**
 * The wait before retrying a GET inside one request: "full jitter" (`src/backoff.ts`) from
 * `BACKOFF_BASE_MS` to `BACKOFF_CAP_MS`. `attempt` is 0 for the first retry.
 */
export function backoffDelay(attempt: number, random: () => number): number {
  return fullJitterDelay(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS, random)
}

/** True for errors a new attempt may cure: timeouts and unreachable CMS, not a body cap or a bug. */
export function isRetryableError(error: unknown): boolean {
  return isProxyError(error, 'UPSTREAM_TIMEOUT') || isProxyError(error, 'UPSTREAM_UNAVAILABLE')
}

/**
 * How long to wait before retrying a response with `status`, or `undefined` when it must be
 * returned as it is (not a retry status, or a `Retry-After` above `RETRY_AFTER_MAX_MS`).
 */
export function statusRetryDelay(
  status: number,
  retryAfter: string | string[] | undefined,
  attempt: number,
  random: () => number,
  now: () => number,
): number | undefined {
  if (!RETRY_STATUSES.has(status)) return undefined
  const backoff = backoffDelay(attempt, random)
  const asked = parseRetryAfter(retryAfter, now)
  if (asked === undefined) return backoff
  if (asked > RETRY_AFTER_MAX_MS) return undefined
  return Math.max(asked, backoff)
}

/** RFC 9110 §10.2.3: delay-seconds or an HTTP-date; ms from now, or `undefined` when absent/garbled. */
export function parseRetryAfter(value: string | string[] | undefined, now: () => number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim()
  if (text === undefined || text === '') return undefined
  if (/^\d+$/.test(text)) return Number(text) * 1_000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now())
}
