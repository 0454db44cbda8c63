/**
 * The budget every client-caused CMS request (a read-through miss) must fit in, checked in this
 * order, each step refusing at once or after a bounded wait:
 *
 * 1. the client's own share (a token bucket per client address, in this process): one client
 *    sending distinct misses spends its own share, not everyone's — refused with 429, held for
 *    `clientRefusalDelayMs` first, so that a client sending as fast as it is answered slows to
 *    the pace of its refusals instead of taking the CPU every other reader needs;
 * 2. a place among the requests in flight (`adaptive-limit.ts`), waited for at most
 *    READ_THROUGH_QUEUE_TIMEOUT — refused with 503;
 * 3. the CMS budget (`shared-bucket.ts`, one for the cluster with Redis) — refused with 503.
 *
 * A refusal at a later step gives back what the earlier ones took, so a client is never charged
 * for a request the CMS did not get. The sync and refreshes never come here: they have their own
 * connection pool and no budget but their intervals.
 * @module
 */
import type { Slot, ConcurrencyGate } from './adaptive-limit.js'
import { createHoldQueue, type HoldQueue } from './hold-queue.js'
import type { SharedBucket, BucketScope } from './shared-bucket.js'
import type { LocalBuckets } from './token-bucket.js'

export type RefusalReason = 'client_share' | 'cms_budget' | 'queue_full' | 'queue_timeout'

export type Admission =
  | { readonly ok: true; release(outcome: { rttMs: number; ok: boolean }): void }
  | { readonly ok: false; readonly reason: RefusalReason; readonly retryAfterMs: number }

export interface BudgetState {
  /** Where the CMS budget is kept: `cluster` (Redis) or `local` (this instance alone). */
  readonly scope: BucketScope
  readonly tokens: number
  readonly concurrencyLimit: number
  readonly inFlight: number
  readonly queued: number
  /** Clients with a share being tracked. */
  readonly clients: number
}

export interface ReadThroughBudget {
  /** @param client the client's address; `undefined` for requests no client waits on (background refreshes). */
  admit(client: string | undefined): Promise<Admission>
  /**
   * The refusal `admit(client)` would give for the client's own share, decided now and spending
   * nothing; `undefined` when the share holds a token (then `admit` goes on as usual). It lets a
   * miss be refused before the work a granted one needs (a lock in Redis, a flight of its own).
   */
  refuseSpentShare(client: string): Promise<Admission> | undefined
  state(): BudgetState
}

export interface ReadThroughBudgetOptions {
  readonly clients: LocalBuckets
  readonly gate: ConcurrencyGate
  readonly cms: SharedBucket
  /** Retry-After for a request refused a place in flight: the CMS's usual answer time, rounded up. */
  readonly busyRetryAfterMs: number
  /** Told of every refusal (metrics, the rate-limited log line). */
  readonly onRefused?: (reason: RefusalReason, client: string | undefined) => void
  /** How long a refusal for the client's share is held before it is answered (0: at once). */
  readonly clientRefusalDelayMs?: number
  /** Most refusals held at once; past it they are answered at once. */
  readonly maxHeldRefusals?: number
  /** Needed with a `clientRefusalDelayMs`. */
  readonly timers?: { setTimeout(callback: () => void, ms: number): unknown }
  /** Spreads the holds (see `hold`); default Math.random. */
  readonly random?: () => number
  /** With it, holds ending within {@link HOLD_SLOT_MS} of each other share one timer (`hold-queue.ts`). */
  readonly now?: () => number
}

/** Width of the hold queue's slots: a hold may end this much later than drawn. */
export const HOLD_SLOT_MS = 10

export function createReadThroughBudget(options: ReadThroughBudgetOptions): ReadThroughBudget {
  const { clients, gate, cms } = options
  const holdMs = options.clientRefusalDelayMs ?? 0
  const maxHeld = options.maxHeldRefusals ?? 1_000
  let held = 0
  const timers = options.timers
  const queue: HoldQueue | undefined = timers && options.now ? createHoldQueue({ now: options.now, timers, slotMs: HOLD_SLOT_MS }) : undefined
  const refuse = (reason: RefusalReason, retryAfterMs: number, client: string | undefined): Admission => {
    options.onRefused?.(reason, client)
    return { ok: false, reason, retryAfterMs }
  }

  /**
   * A bounded wait before a client hears it is over its share: between half of `holdMs` and all of
   * it, at random, so that the refusals of a client's many connections do not come back (and its
   * next requests arrive) in one burst that every other reader would queue behind.
   */
  function heldRefusal(refusal: Admission): Promise<Admission> {
    if (holdMs <= 0 || !timers || held >= maxHeld) return Promise.resolve(refusal)
    held++
    const ms = Math.round(holdMs * (0.5 + 0.5 * (options.random ?? Math.random)()))
    // One promise per held refusal, and no async frames kept alive behind it (docs/performance.md, "Refusals").
    const ended = queue ? queue.hold(ms) : new Promise<void>((resolve) => timers.setTimeout(resolve, ms))
    return ended.then(() => {
      held--
      return refusal
    })
  }

  /** The client's share: its refusal (held), or `undefined` with one token taken. */
  function takeShare(client: string): Promise<Admission> | undefined {
    const share = clients.take(client)
    return share.ok ? undefined : heldRefusal(refuse('client_share', share.retryAfterMs, client))
  }

  return {
    async admit(client) {
      if (client !== undefined) {
        const refused = takeShare(client)
        if (refused) return refused
      }
      const place = await gate.acquire()
      if (!place.ok) {
        if (client !== undefined) clients.giveBack(client)
        return refuse(place.reason, options.busyRetryAfterMs, client)
      }
      const slot: Slot = place.slot
      const token = await cms.take()
      if (!token.ok) {
        slot.cancel()
        if (client !== undefined) clients.giveBack(client)
        return refuse('cms_budget', token.retryAfterMs, client)
      }
      return { ok: true, release: (outcome) => slot.release(outcome) }
    },
    refuseSpentShare(client) {
      const refused = takeShare(client)
      // Granted: the token goes back, as if nothing had been asked (`giveBack` refills to now first).
      if (!refused) clients.giveBack(client)
      return refused
    },
    state() {
      return {
        scope: cms.scope,
        tokens: Math.floor(cms.tokens * 100) / 100,
        concurrencyLimit: gate.limit,
        inFlight: gate.inFlight,
        queued: gate.queued,
        clients: clients.size,
      }
    },
  }
}
