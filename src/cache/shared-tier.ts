/**
 * Redis, when configured: the shared read-through tier, the cross-instance single flight and the
 * shared copy of the last good snapshot, over one command connection and one subscriber.
 * Without Redis settings there is no shared tier and everything lives in the process.
 * @module
 */
import type { Config } from '../config/load-config.js'
import type { SnapshotTarget } from '../persist/snapshot-persistence.js'
import { settleWithin } from '../deadline.js'
import { createSharedFlight, type SharedFlight } from './shared-flight.js'
import { boundedCommand } from './stores/bounded-command.js'
import { createRedisClient, createRedisStore, isRedisUp, type RedisClient, type RedisStore, type RedisStoreLogger } from './stores/redis-store.js'

export interface SharedTier {
  readonly client: RedisClient
  /** The pub/sub connection (shared by the single flight and the cluster channel). */
  readonly subscriber: RedisClient
  readonly store: RedisStore
  readonly flight: SharedFlight
  readonly snapshotTarget: SnapshotTarget
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
  const snapshotKey = `${prefix}snapshot`
  // Snapshots are large: reading or writing one gets more time than a cache command. ioredis
  // bounds every command of a connection by its own `commandTimeout`, which would cut a snapshot
  // short at the cache's bound, so snapshots travel on a connection of their own with the longer one.
  const snapshotTimeoutMs = Math.max(2000, config.redisCommandTimeoutMs * 8)
  const snapshotClient = createRedisClient({ ...clientConfig, commandTimeoutMs: snapshotTimeoutMs })
  const patchesKey = `${prefix}snapshot:patches`
  const snapshotCommand = <T>(operation: string, command: () => Promise<T>) => boundedCommand(operation, command, snapshotTimeoutMs)
  const snapshotTarget: SnapshotTarget = {
    name: `redis:${snapshotKey}`,
    // A failed or slow read is "nothing stored".
    read: async () => (await snapshotCommand('get snapshot', () => snapshotClient.getBuffer(snapshotKey)).catch(() => null)) ?? undefined,
    // A failed write throws, so that no patch is stored over a full snapshot Redis does not hold.
    // The patches of the one before go after it: a reader between the two commands finds patches
    // that do not apply to the new full snapshot, and ignores them (`patch-chain.ts`).
    write: async (buf) => {
      await snapshotCommand('set snapshot', () => snapshotClient.set(snapshotKey, buf))
      await snapshotCommand('del snapshot patches', () => snapshotClient.del(patchesKey))
    },
    patches: {
      // RPUSH answers the list's new length: anything but `position + 1` means the list is not the
      // one this instance wrote (Redis lost it, or another instance stored a full snapshot since).
      append: async (buf, position) => (await snapshotCommand('rpush snapshot patch', () => snapshotClient.rpush(patchesKey, buf))) === position + 1,
      read: (position) => snapshotCommand('lrange snapshot patches', () => snapshotClient.lrangeBuffer(patchesKey, position, -1)),
    },
  }
  return {
    client,
    subscriber,
    store,
    flight,
    snapshotTarget,
    isUp: () => isRedisUp(client),
    async waitUntilUp(ms) {
      // Both connections a warm start reads through: a snapshot asked for on a connection still
      // connecting would be refused at once (no offline queue) and read as "nothing stored".
      const pending = [client, snapshotClient].filter((connection) => !isRedisUp(connection))
      if (pending.length > 0) {
        const ready = (connection: RedisClient) => new Promise<void>((resolve) => connection.once('ready', () => resolve()))
        await settleWithin('redis ready', () => Promise.all(pending.map(ready)), ms).catch(() => undefined)
      }
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
