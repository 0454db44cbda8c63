/**
 * The CDN part: the purge targets configured (Fastly, Cloudflare, Varnish) behind one delivery
 * queue (`cdn/cdn-purger.ts`), with its reports as events. When a swap's keys are queued is the
 * after-swap pipeline's to say (`compose/after-swap.ts`).
 * @module
 */
import type { Dispatcher } from 'undici'
import { createCdnPurger } from '../cdn/cdn-purger.js'
import type { PurgeDelivery } from '../cdn/purge-delivery.js'
import type { Config } from '../config/load-config.js'
import type { LogSink } from '../observability/log-sink.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { Clock } from './clock.js'

export interface CdnOptions {
  readonly config: Config
  readonly logger: Pick<LogSink, 'info' | 'warn' | 'error'>
  readonly events: ShieldEvents
  readonly clock: Clock
  /** Transport to the purge targets (tests: loopback fakes). */
  readonly dispatcher?: Dispatcher
}

/** The delivery queue; `undefined` when no purge target is configured. */
export function composeCdn(options: CdnOptions): PurgeDelivery | undefined {
  const { logger, clock } = options
  return createCdnPurger({
    config: options.config,
    logger,
    now: clock.now,
    random: clock.random,
    timers: clock.timers,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    report: (report) => options.events.emit('cdnPurge', report),
  })
}
