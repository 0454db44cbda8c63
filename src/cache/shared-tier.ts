/**
 * Redis, when configured: the shared read-through tier, the cross-instance single flight and the
 * shared copy of the last good snapshot (`redis-snapshot-target.ts`), over one command connection and one subscriber.
 * Without Redis settings there is no shared tier and everything lives in the process.
 * @module
 */
import type { Config } from '../config/load-config.js'
import type { SnapshotTarget } from '../persist/snapshot-persistence.js'
import { createSharedFlight, type SharedFlight } from './shared-flight.js'
import { createRedisSnapshotTarget } from './redis-snapshot-target.js'
import { createRedisClient, createRedisStore, isRedisUp, untilRedisUp, type RedisClient, type RedisStore, type RedisStoreLogger } from './stores/redis-store.js'

export interface SharedTier {
  readonly client: RedisClient
  /** The pub/sub connection (shared by the single flight and the cluster channel). */
  readonly subscriber: RedisClient
  readonly store: RedisStore
  readonly flight: SharedFlight
  readonly snapshotTarget: SnapshotTarget
  /** The shared copy of another tree's snapshot (another of the CMS's Sites), under its own prefix. */
  snapshotTargetFor(prefix: string): SnapshotTarget
  isUp(): boolean
  /** Resolves when Redis is ready, or after `ms` (a warm start waits this long at most). */
  waitUntilUp(ms: number): Promise<boolean>
  close(): Promise<void>
}

export function hasRedis(config: Config): boolean {
  return config.redisUrl !== undefined || config.redisSentinels !== undefined || config.redisClusterNodes !== undefined
}

export function createSharedTier(config: Config, logger: RedisStoreLogger, now: () => number): SharedTier | undefined {
  if (!hasRedis(config)) return undefined
  const clientConfig = {
    ...(config.redisUrl === undefined ? {} : { url: config.redisUrl }),
    ...(config.redisSentinels === undefined ? {} : { sentinels: config.redisSentinels }),
    ...(config.redisSentinelName === undefined ? {} : { sentinelName: config.redisSentinelName }),
    ...(config.redisClusterNodes === undefined ? {} : { cluster: config.redisClusterNodes }),
    ...(config.redisPassword === undefined ? {} : { password: config.redisPassword }),
    commandTimeoutMs: config.redisCommandTimeoutMs,
    connectTimeoutMs: Math.max(1000, config.redisCommandTimeoutMs * 4),
  }
  const client = createRedisClient(clientConfig, logger)
  // A subscribed connection can run no other command: pub/sub gets its own.
  const subscriber = createRedisClient(clientConfig)
  const prefix = config.redisPrefix
  const store = createRedisStore({ redis: client, prefix: `${prefix}rt:`, commandTimeoutMs: config.redisCommandTimeoutMs, now, logger })
  const flight = createSharedFlight({
    redis: client,
    subscriber,
    prefix,
    // A holder's CMS request may take up to the upstream timeout (plus a retry's backoff).
    lockMs: config.upstreamTimeoutMs + 1000,
    commandTimeoutMs: config.redisCommandTimeoutMs,
  })
  // Snapshots are large: reading or writing one gets more time than a cache command. ioredis
  // bounds every command of a connection by its own `commandTimeout`, which would cut a snapshot
  // short at the cache's bound, so snapshots travel on a connection of their own with the longer one.
  const snapshotTimeoutMs = Math.max(2000, config.redisCommandTimeoutMs * 8)
  const snapshotClient = createRedisClient({ ...clientConfig, commandTimeoutMs: snapshotTimeoutMs })
  const snapshotTarget = createRedisSnapshotTarget({ client: snapshotClient, prefix, timeoutMs: snapshotTimeoutMs, logger, now })
  return {
    client,
    subscriber,
    store,
    flight,
    snapshotTarget,
    snapshotTargetFor: (sitePrefix) => createRedisSnapshotTarget({ client: snapshotClient, prefix: sitePrefix, timeoutMs: snapshotTimeoutMs, logger, now }),
    isUp: () => isRedisUp(client),
    async waitUntilUp(ms) {
      // Both connections a warm start reads through: a snapshot asked for on a connection still
      // connecting would be refused at once (no offline queue) and read as "nothing stored".
      await Promise.all([client, snapshotClient].map((connection) => untilRedisUp(connection, ms)))
      return isRedisUp(client)
    },
    async close() {
      // First, so the subscription stops being retried and no waiter outlives the connection.
      flight.close()
      subscriber.disconnect()
      snapshotClient.disconnect()
      client.disconnect()
    },
  }
}
