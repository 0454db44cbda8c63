/**
 * The CDN part: on the syncing instance, once a synced snapshot is stored and announced and the
 * purge gate opens, its tree diff's keys go to the purge targets (docs/cdn-purging.md#when-a-purge-is-sent).
 * Nothing here is awaited by the sync: a gate that waits or a CDN that is down delays only purges.
 * @module
 */
import type { Dispatcher } from 'undici'
import { createCdnPurger } from '../cdn/cdn-purger.js'
import type { PurgeDelivery } from '../cdn/purge-delivery.js'
import type { Config } from '../config/load-config.js'
import type { LogSink } from '../observability/log-sink.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { Clock } from './clock.js'

export interface PurgeGate {
  /** resolves when it is safe to purge for this snapshot */
  beforePurge(fingerprint: string): Promise<void>
}

/** One instance serves what it synced the moment it swaps: nothing to wait for. */
export const OPEN_GATE: PurgeGate = { beforePurge: () => Promise.resolve() }

export interface CdnParts {
  /** The delivery queue; `undefined` when no purge target is configured. */
  readonly delivery: PurgeDelivery | undefined
  /**
   * Call at the swap of a snapshot this instance synced: its keys are purged once `stored`
   * settles (the snapshot stored and announced) and then the gate opens. Returns at once and never throws.
   */
  purgeAfterSwap(keys: readonly string[], fingerprint: string, swappedAt: number, stored?: Promise<unknown>): void
  /** Resolves when no gate is being waited for and nothing is queued or in flight. */
  idle(): Promise<void>
  close(): Promise<void>
}

export interface CdnOptions {
  readonly config: Config
  readonly logger: Pick<LogSink, 'info' | 'warn' | 'error'>
  readonly events: ShieldEvents
  readonly clock: Clock
  /** Transport to the purge targets (tests: loopback fakes). */
  readonly dispatcher?: Dispatcher
  /** Read at each purge: the cluster's gate is built after this part (`app.ts` connects it in phase 2). Default: `OPEN_GATE`. */
  readonly gate?: () => PurgeGate | undefined
}

export function composeCdn(options: CdnOptions): CdnParts {
  const { logger, clock } = options
  const delivery = createCdnPurger({
    config: options.config,
    logger,
    now: clock.now,
    random: clock.random,
    timers: clock.timers,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    report: (report) => options.events.emit('cdnPurge', report),
  })
  const gating = new Set<Promise<void>>()
  let closed = false

  function purgeAfterSwap(keys: readonly string[], fingerprint: string, swappedAt: number, stored: Promise<unknown> = Promise.resolve()): void {
    if (!delivery || closed || keys.length === 0) return
    const settled = () => undefined
    const waiting: Promise<void> = stored
      .then(settled, settled)
      .then(() => (closed ? undefined : (options.gate?.() ?? OPEN_GATE).beforePurge(fingerprint)))
      .catch((error: unknown) => logger.warn({ err: error, fingerprint }, 'cdn purge: the gate failed; purging anyway'))
      .then(() => {
        if (!closed) delivery.enqueue(keys, swappedAt)
      })
      .finally(() => gating.delete(waiting))
    gating.add(waiting)
  }

  return {
    delivery,
    purgeAfterSwap,
    async idle() {
      // A gate that opens while the queue drains queues more: look again until both are quiet.
      do {
        while (gating.size > 0) await Promise.all(gating)
        await delivery?.idle()
      } while (gating.size > 0)
    },
    async close() {
      closed = true
      await delivery?.close()
    },
  }
}
