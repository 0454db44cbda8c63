/**
 * The cluster part, with Redis: the leader lease (who syncs), the channel (snapshots and refresh
 * requests between instances) and the follower's loading of the shared snapshot.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { createClusterChannel } from '../cluster/cluster-channel.js'
import type { SharedTier } from '../cache/shared-tier.js'
import type { EndpointGenerations } from '../cache/endpoint-generations.js'
import type { Config } from '../config/load-config.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import { followPatches, loadStoredChainAsync } from '../persist/patch-chain.js'
import type { SnapshotPersistence } from '../persist/snapshot-persistence.js'
import { createClusterCoordinator, followRole, type ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import { createLeaderLease } from '../cluster/leader-lease.js'
import type { SyncService } from '../sync/sync-service.js'
import type { Clock } from './clock.js'

/** This instance's id among those sharing a Redis: the lease's owner, and its record of what it serves. */
export function instanceOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID()}`
}

/** How often the cluster checks Redis between lease ticks: a third of the lease, at least 100 ms. */
export function clusterPollMs(config: Config): number {
  return Math.max(100, Math.floor(config.leaderLeaseMs / 3))
}

export interface ClusterOptions {
  readonly config: Config
  /** From {@link instanceOwner}. */
  readonly owner: string
  readonly shared: SharedTier
  readonly sync: SyncService
  readonly persistence: SnapshotPersistence | undefined
  readonly endpointGenerations: Pick<EndpointGenerations, 'adopt' | 'settle'>
  readonly logger: FastifyBaseLogger
  readonly events: ShieldEvents
  readonly clock: Clock
}

export function composeCluster(options: ClusterOptions): ClusterCoordinator {
  const { config, shared, sync, logger, events } = options
  const { now, timers } = options.clock
  const lease = createLeaderLease({
    redis: shared.client,
    key: `${config.redisPrefix}leader`,
    owner: options.owner,
    leaseMs: config.leaderLeaseMs,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    now,
    timers,
    logger,
    onRoleChange: (role) => {
      // Whoever led meanwhile wrote its own snapshots and patches: this one's next save is whole.
      options.persistence?.forgetStored()
      followRole(sync, role, logger)
      events.emit('role', { role })
    },
  })
  // Roles settle when Redis is back, not a tick later: after a restart without data, a standalone
  // instance and the old leader would otherwise both sync for up to a third of the lease.
  shared.client.on('ready', () => lease.reconnected())
  const channel = createClusterChannel({
    redis: shared.client,
    subscriber: shared.subscriber,
    prefix: config.redisPrefix,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    logger,
  })
  const origin = { upstreamUrl: config.upstreamUrl, baseUrl: config.baseUrl }
  /** The full snapshot and the patches stored after it (a follower that missed one, or on another base). */
  async function loadStored() {
    const target = shared.snapshotTarget
    const buf = await target.read()
    if (!buf) return undefined
    const patches = await target.patches?.read(0).catch(() => []) ?? []
    const loaded = await loadStoredChainAsync(buf, patches, origin)
    if (loaded.why !== undefined) logger.warn({ reason: loaded.why, patches: loaded.patches }, 'cluster: not every stored patch could be applied')
    if (!loaded.result.ok) {
      logger.warn({ reason: loaded.result.reason }, 'cluster: the shared snapshot cannot be served')
      return undefined
    }
    return loaded.result.snapshot
  }
  return createClusterCoordinator({
    sync,
    lease,
    channel,
    endpointGenerations: {
      endpoints: config.apiEndpoints,
      adopt: options.endpointGenerations.adopt,
      settle: options.endpointGenerations.settle,
    },
    loadShared: async (announcement) => {
      const target = shared.snapshotTarget
      const base = sync.current
      const patch = announcement?.patch
      if (announcement && patch && base && target.patches) {
        // Serving the announced patch's base: that patch (and any stored after it) is all there is
        // to read. Further behind (an announcement missed), the log may still hold the way from the
        // snapshot served: at most SNAPSHOT_PATCHES_PER_FULL small patches, not the whole tree.
        const onBase = base.fingerprint === patch.from
        const buffers = await target.patches.read(onBase ? patch.index : 0).catch(() => [])
        const followed = followPatches(base, buffers, config.baseUrl)
        if (followed.snapshot && (onBase || followed.snapshot.version >= announcement.version)) return followed.snapshot
        if (onBase) logger.warn({ reason: followed.why, index: patch.index }, 'cluster: the announced patch does not apply here; loading the whole snapshot')
      }
      return loadStored()
    },
    // A Redis that came back empty gets the leader's snapshot again (followers start from it).
    storeShared: async (snapshot) => {
      await options.persistence?.save(snapshot, { full: true })
    },
    pollMs: clusterPollMs(config),
    timers,
    logger,
  })
}
