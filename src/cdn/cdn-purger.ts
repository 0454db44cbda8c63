/**
 * The purge targets the configuration names, behind one delivery queue; `undefined` when it names
 * none (docs/cdn-purging.md).
 * @module
 */
import type { Dispatcher } from 'undici'
import type { Config } from '../config/load-config.js'
import type { LogSink } from '../observability/log-sink.js'
import type { Timers } from '../timers.js'
import { createCloudflareTarget } from './cloudflare-target.js'
import { createFastlyTarget } from './fastly-target.js'
import { createPurgeDelivery, type PurgeDelivery, type PurgeReport } from './purge-delivery.js'
import type { PurgeHttp, PurgeTarget, TargetName } from './purge-target.js'
import { createVarnishTarget } from './varnish-target.js'

export type CdnConfig = Pick<
  Config,
  'cdnPurgeVarnish' | 'cdnSoftPurge' | 'fastlyServiceId' | 'fastlyApiToken' | 'fastlyApiUrl' |
  'cloudflareZoneId' | 'cloudflareApiToken' | 'cloudflareApiUrl' | 'cdnMaxAgeMs'
>

/** A purge request that takes longer is retried: the APIs answer within a second when well. */
export const PURGE_TIMEOUT_MS = 10_000

export interface CdnPurgerOptions {
  readonly config: CdnConfig
  readonly logger: Pick<LogSink, 'info' | 'warn' | 'error'>
  readonly now: () => number
  readonly random: () => number
  readonly timers: Timers
  /** Transport to the purge APIs (tests: loopback fakes); default undici's global agent. */
  readonly dispatcher?: Dispatcher
  readonly report?: (report: PurgeReport) => void
}

/** The kinds of purge target configured, each once (metrics start their series from it). */
export function configuredTargets(config: CdnConfig): TargetName[] {
  const names: TargetName[] = []
  if ((config.cdnPurgeVarnish?.length ?? 0) > 0) names.push('varnish')
  if (config.fastlyServiceId !== undefined && config.fastlyApiToken !== undefined) names.push('fastly')
  if (config.cloudflareZoneId !== undefined && config.cloudflareApiToken !== undefined) names.push('cloudflare')
  return names
}

export function purgeTargets(config: CdnConfig, http: PurgeHttp): PurgeTarget[] {
  const soft = config.cdnSoftPurge
  const targets: PurgeTarget[] = (config.cdnPurgeVarnish ?? []).map((baseUrl) => createVarnishTarget({ baseUrl, soft, http }))
  if (config.fastlyServiceId !== undefined && config.fastlyApiToken !== undefined) {
    targets.push(createFastlyTarget({ apiUrl: config.fastlyApiUrl, serviceId: config.fastlyServiceId, token: config.fastlyApiToken, soft, http }))
  }
  if (config.cloudflareZoneId !== undefined && config.cloudflareApiToken !== undefined) {
    targets.push(createCloudflareTarget({ apiUrl: config.cloudflareApiUrl, zoneId: config.cloudflareZoneId, token: config.cloudflareApiToken, http }))
  }
  return targets
}

export function createCdnPurger(options: CdnPurgerOptions): PurgeDelivery | undefined {
  const http: PurgeHttp = { timeoutMs: PURGE_TIMEOUT_MS, now: options.now, ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}) }
  const targets = purgeTargets(options.config, http)
  if (targets.length === 0) return undefined
  return createPurgeDelivery({
    targets,
    logger: options.logger,
    now: options.now,
    random: options.random,
    timers: options.timers,
    giveUpAfterMs: options.config.cdnMaxAgeMs,
    ...(options.report ? { report: options.report } : {}),
  })
}
