/**
 * What follows the swap of a snapshot this instance synced, in this order:
 *
 *   1. save      store it (SNAPSHOT_FILE, Redis), whole or as a patch against the last one stored;
 *   2. announce  tell the other instances (with Redis) what was stored, so that they load it;
 *   3. served    wait for the purge gate: every live instance serves it, or CDN_PURGE_WAIT passed
 *                (docs/architecture.md#purging-a-cdn-after-every-instance-serves);
 *   4. purge     queue the tree diff's keys at the CDN's purge targets (docs/cdn-purging.md#when-a-purge-is-sent).
 *
 * Why this order: a CDN purged before the others serve the new snapshot would fetch the old one
 * again from an instance that has not loaded it, and they load it only once it is stored and
 * announced. A failed save or announcement is logged and the purge still follows (the gate then
 * decides how long to wait); a failed gate is logged and purges anyway. Nothing here is awaited by
 * the sync: a slow Redis or a CDN that is down delays only this.
 *
 * The steps are passed in, so that the order is this module's alone and its test fakes each one.
 * @module
 */
import type { PurgeDelivery } from '../cdn/purge-delivery.js'
import type { LogSink } from '../observability/log-sink.js'
import type { SavedSnapshot } from '../persist/snapshot-persistence.js'
import type { Snapshot } from '../tree/snapshot.js'

export interface SyncedSwap {
  /** The tree diff's `Surrogate-Key`/`Cache-Tag` keys. */
  readonly purgeKeys: readonly string[]
  readonly snapshot: Snapshot
  /** ms since the epoch. */
  readonly swappedAt: number
}

/** Step 3: resolves when it is safe to purge for this snapshot. */
export interface PurgeGate {
  beforePurge(fingerprint: string): Promise<void>
}

/** One instance serves what it synced the moment it swaps: nothing to wait for. */
export const OPEN_GATE: PurgeGate = { beforePurge: () => Promise.resolve() }

export interface AfterSwapSteps {
  /** Step 1; `undefined` without persistence (and then nothing is announced either). */
  readonly save: ((snapshot: Snapshot) => Promise<SavedSnapshot | undefined>) | undefined
  /** Step 2; without Redis there is nobody to tell. */
  readonly announce: (snapshot: Snapshot, saved: SavedSnapshot | undefined) => Promise<void> | undefined
  /** Step 3. */
  readonly gate: PurgeGate
  /** Step 4: the delivery queue; `undefined` when no purge target is configured. */
  readonly purge: Pick<PurgeDelivery, 'enqueue' | 'idle' | 'close'> | undefined
}

/** CDN purging after each synced swap, as the rest of the app sees it (`shield.cdn`). */
export interface CdnParts {
  /** The delivery queue; `undefined` when no purge target is configured. */
  readonly delivery: Pick<PurgeDelivery, 'enqueue' | 'idle' | 'close'> | undefined
  /** Resolves when no swap waits to be purged and nothing is queued or in flight. */
  idle(): Promise<void>
  /** Stops purging: swaps still waiting are not purged, queued keys are dropped. */
  close(): Promise<void>
}

export interface AfterSwap extends CdnParts {
  /** At the swap of a snapshot this instance synced. Returns at once and never throws. */
  run(swap: SyncedSwap): void
}

export function createAfterSwap(steps: AfterSwapSteps, logger: Pick<LogSink, 'warn'>): AfterSwap {
  const purge = steps.purge
  /** The runs that will purge, until they have queued their keys. */
  const purging = new Set<Promise<void>>()
  let closed = false

  async function afterSwap({ snapshot, purgeKeys, swappedAt }: SyncedSwap, willPurge: boolean): Promise<void> {
    try {
      if (steps.save) {
        const saved = await steps.save(snapshot)
        await steps.announce(snapshot, saved)
      }
    } catch (error) {
      logger.warn({ err: error }, 'snapshot: storing or announcing failed')
    }
    if (!willPurge || closed) return
    try {
      await steps.gate.beforePurge(snapshot.fingerprint)
    } catch (error) {
      logger.warn({ err: error, fingerprint: snapshot.fingerprint }, 'cdn purge: the gate failed; purging anyway')
    }
    if (!closed) purge?.enqueue(purgeKeys, swappedAt)
  }

  return {
    delivery: purge,
    run(swap) {
      const willPurge = purge !== undefined && !closed && swap.purgeKeys.length > 0
      const running = afterSwap(swap, willPurge)
      if (!willPurge) return
      purging.add(running)
      void running.finally(() => purging.delete(running))
    },
    async idle() {
      // A gate that opens while the queue drains queues more: look again until both are quiet.
      do {
        while (purging.size > 0) await Promise.all(purging)
        await purge?.idle()
      } while (purging.size > 0)
    },
    async close() {
      closed = true
      await purge?.close()
    },
  }
}
