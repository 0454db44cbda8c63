/**
 * When the sync runs next, after one ended: at the interval, soon (refresh requests came in while
 * it ran), or after a backoff (it failed). Pure: the clock's reading and the random source are
 * passed in.
 * @module
 */
import { retryDelay } from '../backoff.js'
import type { SyncResult } from './sync-outcome.js'

export interface ScheduleInput {
  readonly result: Pick<SyncResult, 'ok'> & { readonly retryAfterMs?: number }
  readonly hasSnapshot: boolean
  readonly consecutiveFailures: number
  /** Refresh requests arrived while the sync ran. */
  readonly refreshPending: boolean
  readonly now: number
  readonly random: () => number
  readonly intervalMs: number
  readonly debounceMs: number
  readonly retryMaxMs: number
  readonly unreadyRetryMaxMs: number
  /** Under `SYNC_BUDGET`: when the next listing walk may start (`plan-net.ts`), instead of the interval. */
  readonly walkDueAt?: number
}

export interface NextSync {
  /** `refresh`: refresh requests wait for it (a new one need not set a timer). */
  readonly kind: 'interval' | 'refresh'
  readonly delayMs: number
  /** Until when the CMS asked not to be called; 0 when it did not. */
  readonly quietUntil: number
}

export function planNextSync(input: ScheduleInput): NextSync {
  if (!input.result.ok) {
    // A CMS that says when to come back is believed, up to SYNC_RETRY_MAX: a gateway's
    // `Retry-After: 86400` must not stop the syncs for a day. Without a snapshot the backoff
    // stays short (`UNREADY_RETRY_MAX_MS`); it grows from where the failures count once one is
    // served (adopted, received from the leader).
    const cap = input.hasSnapshot ? input.retryMaxMs : Math.min(input.unreadyRetryMaxMs, input.retryMaxMs)
    const backoff = retryDelay(input.consecutiveFailures, cap, input.random)
    const retryAfterMs = input.result.retryAfterMs
    const delayMs = Math.max(backoff, Math.min(retryAfterMs ?? 0, input.retryMaxMs))
    return { kind: 'interval', delayMs, quietUntil: retryAfterMs === undefined ? 0 : input.now + delayMs }
  }
  // Requests that came in during the sync are handled now, not at the next interval.
  if (input.refreshPending) return { kind: 'refresh', delayMs: input.debounceMs, quietUntil: 0 }
  const delayMs = input.walkDueAt === undefined ? input.intervalMs : Math.max(0, input.walkDueAt - input.now)
  return { kind: 'interval', delayMs, quietUntil: 0 }
}
