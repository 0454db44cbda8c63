/**
 * With Redis: every instance records which snapshot it serves (`cluster/served-versions.ts`), and
 * the syncing instance waits, before it purges a CDN, until every live instance serves the new
 * one (docs/architecture.md#purging-a-cdn-after-every-instance-serves).
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { SharedTier } from '../cache/shared-tier.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import { createServedVersions, type ServedVersions } from '../cluster/served-versions.js'
import type { Config } from '../config/load-config.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { PurgeGate } from './after-swap.js'
import type { Clock } from './clock.js'
import { clusterPollMs } from './cluster.js'

export interface ServedOptions {
  readonly config: Config
  readonly shared: SharedTier
  /** The lease's owner: the same id names the instance in both. */
  readonly owner: string
  readonly events: ShieldEvents
  readonly logger: FastifyBaseLogger
  readonly clock: Clock
}

/** Reports every snapshot swapped in; `start()` it with the cluster, `stop()` it before. */
export function composeServed(options: ServedOptions): ServedVersions {
  const { config, shared, owner, events, logger } = options
  const heartbeatMs = clusterPollMs(config)
  const served = createServedVersions({
    redis: shared.client,
    key: `${config.redisPrefix}served`,
    owner,
    heartbeatMs,
    // An instance unheard of for a lease period (three heartbeats or more) is not waited for.
    staleAfterMs: Math.max(config.leaderLeaseMs, 3 * heartbeatMs),
    commandTimeoutMs: config.redisCommandTimeoutMs,
    now: options.clock.now,
    timers: options.clock.timers,
    logger,
  })
  events.on('snapshot', ({ fingerprint }) => served.report(fingerprint))
  return served
}

/**
 * The CDN's purge gate with Redis: opens when every live instance serves `fingerprint`, or after
 * `waitMs` (`CDN_PURGE_WAIT`) with a warning naming those that do not, or at once when Redis cannot
 * answer. A standalone instance (Redis cannot say who syncs, so every instance syncs by itself)
 * waits for nobody: it purges its own change.
 */
export function servedPurgeGate(
  served: ServedVersions,
  cluster: Pick<ClusterCoordinator, 'role'>,
  waitMs: number,
  logger: Pick<FastifyBaseLogger, 'warn'>,
  events: ShieldEvents,
): PurgeGate {
  async function beforePurge(fingerprint: string): Promise<void> {
    if (cluster.role === 'standalone') {
      events.emit('purgeGate', { result: 'standalone', waitedMs: 0 })
      return
    }
    const { allServe, lagging, waitedMs, reason } = await served.waitForAll(fingerprint, waitMs)
    if (reason === 'stopped') return
    // A Redis that cannot answer is logged where it failed; the purge goes out at once.
    events.emit('purgeGate', { result: allServe ? 'confirmed' : reason === 'timeout' ? 'timeout' : 'unavailable', waitedMs })
    if (reason === 'timeout') {
      logger.warn({ fingerprint, lagging, waitedMs }, 'cdn purge: not every instance serves the new snapshot yet; purging anyway')
    }
  }
  return { beforePurge }
}
