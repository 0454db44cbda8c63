/**
 * Builds the ioredis client for the shared tier from configuration: a standalone server
 * (`REDIS_URL`, redis:// or rediss://), a Sentinel group (`REDIS_SENTINELS` + `REDIS_SENTINEL_NAME`)
 * or a Cluster (`REDIS_CLUSTER_NODES`).
 *
 * Tuned to fail fast and heal in the background (docs/architecture.md#decisions: "a Redis failure degrades to the
 * in-process tier within milliseconds and never turns into a 5xx"): no offline queue, so a
 * command sent while disconnected fails at once instead of waiting for a reconnect; no retry of a
 * command whose connection dropped; a short command timeout; and reconnection forever with a
 * capped backoff, so the tier comes back on its own when Redis does.
 * @module
 */
import { Cluster, Redis } from 'ioredis'
import { createError } from '../../errors.js'
import type { LogSink } from '../../observability/log-sink.js'

export type RedisClient = Redis | Cluster

export interface RedisClientConfig {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…` (TLS). */
  readonly url?: string
  /** `host:port,host:port`: Sentinels to ask for the current master of `sentinelName`. */
  readonly sentinels?: string
  readonly sentinelName?: string
  /** `host:port,host:port`: seed nodes of a Redis Cluster. */
  readonly cluster?: string
  /** Overrides a password in `url`; for Sentinel and Cluster it is the data nodes' password. */
  readonly password?: string
  readonly commandTimeoutMs: number
  readonly connectTimeoutMs: number
}

export type RedisClientLogger = Pick<LogSink, 'info' | 'warn'>

/** Reconnect delay after `attempt` failures: 100 ms more each time, at most 2 s, never giving up. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(Math.max(attempt, 1) * 100, 2000)
}

/**
 * Connects at once (`lazyConnect: false`) and keeps reconnecting; check `isRedisUp` before
 * counting on it. Throws `CONFIG_INVALID` when the configuration names no Redis or a bad address.
 *
 * @example
 * const redis = createRedisClient({ url: 'redis://127.0.0.1:6379', commandTimeoutMs: 250, connectTimeoutMs: 1000 })
 */
export function createRedisClient(config: RedisClientConfig, logger?: RedisClientLogger): RedisClient {
  // Per connection; a Cluster applies them to each node's connection.
  const connection = {
    lazyConnect: false,
    commandTimeout: config.commandTimeoutMs,
    connectTimeout: config.connectTimeoutMs,
    // A command in flight when the connection drops fails instead of being replayed after the
    // reconnect, by which time the caller has long answered from the other tier.
    maxRetriesPerRequest: 0,
    ...(config.password === undefined ? {} : { password: config.password }),
  }
  const standalone = { ...connection, enableOfflineQueue: false, retryStrategy: reconnectDelayMs }
  let client: RedisClient
  if (config.cluster !== undefined) {
    client = new Cluster(parseAddresses('REDIS_CLUSTER_NODES', config.cluster, 6379), {
      enableOfflineQueue: false,
      // ioredis' own ready check sends CLUSTER INFO to a node whose connection is still being
      // made, which the missing offline queue refuses: the check fails, and the whole client
      // disconnects and retries with backoff, for seconds at a start. Readiness is judged in
      // `isRedisUp` instead: every master's connection ready.
      enableReadyCheck: false,
      lazyConnect: false,
      clusterRetryStrategy: reconnectDelayMs,
      redisOptions: connection,
    })
  } else if (config.sentinels !== undefined) {
    if (!config.sentinelName) throw createError('CONFIG_INVALID', 'REDIS_SENTINELS is set but REDIS_SENTINEL_NAME is not')
    client = new Redis({
      ...standalone,
      sentinels: parseAddresses('REDIS_SENTINELS', config.sentinels, 26379),
      name: config.sentinelName,
      // The same backoff when every Sentinel failed to answer (ioredis' default caps at 1 s).
      sentinelRetryStrategy: reconnectDelayMs,
    })
  } else if (config.url !== undefined) {
    if (!/^rediss?:\/\//i.test(config.url)) {
      throw createError('CONFIG_INVALID', `expected REDIS_URL to start with redis:// or rediss://, got "${redactUrl(config.url)}"`)
    }
    client = new Redis(config.url, standalone)
  } else {
    throw createError('CONFIG_INVALID', 'no Redis configured: set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES')
  }
  watchConnection(client, logger)
  return client
}

/**
 * Whether commands sent now would reach Redis: connected and past the ready check; for a Cluster,
 * the slots known and every master's connection ready (a command for a node still connecting is
 * refused at once, as there is no offline queue).
 */
export function isRedisUp(client: RedisClient): boolean {
  if (client.status !== 'ready') return false
  if (!(client instanceof Cluster)) return true
  const masters = client.nodes('master')
  return masters.length > 0 && masters.every((node) => node.status === 'ready')
}

/** How often {@link untilRedisUp} looks again. */
const UP_POLL_MS = 10

/** Resolves with `isRedisUp(client)` once it is true, or after `ms` at most. */
export async function untilRedisUp(client: RedisClient, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms
  while (!isRedisUp(client) && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(UP_POLL_MS, Math.max(1, deadline - performance.now()))).unref())
  }
  return isRedisUp(client)
}

/**
 * Logs the transitions only: while Redis is down ioredis reports every failed reconnect (up to
 * one every 2 s, per node), which would otherwise flood the log. Listening at all also keeps
 * ioredis from printing "Unhandled error event" to stderr.
 */
function watchConnection(client: RedisClient, logger: RedisClientLogger | undefined): void {
  let up = false
  let reportedDown = false
  client.on('ready', () => {
    up = true
    reportedDown = false
    logger?.info({}, 'redis: connected')
  })
  client.on('error', (error: Error) => {
    if (reportedDown) return
    reportedDown = true
    logger?.warn({ err: error }, up ? 'redis: connection lost; reconnecting in the background' : 'redis: cannot connect; retrying in the background')
    up = false
  })
}

/** `host:port,host:port` (IPv6 as `[::1]:6379`); a missing port is `defaultPort`. */
export function parseAddresses(variable: string, text: string, defaultPort: number): { host: string; port: number }[] {
  const parts = text.split(',').map((part) => part.trim()).filter((part) => part !== '')
  if (parts.length === 0) throw createError('CONFIG_INVALID', `expected ${variable} to list host:port addresses, got "${text}"`)
  return parts.map((part) => {
    const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d+))?$/.exec(part)
    const host = match?.[1] ?? match?.[2]
    const port = match?.[3] === undefined ? defaultPort : Number(match[3])
    if (host === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw createError('CONFIG_INVALID', `expected ${variable} to list host:port addresses, got "${part}"`)
    }
    return { host, port }
  })
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@')
}
