/**
 * The shared tier: entries in Redis, one string per key (`SET key <entry> PX ttl`), so many
 * instances share one copy and a fresh instance starts warm.
 *
 * Redis is optional and must never cost a reader anything (docs/architecture.md#decisions: "a Redis failure degrades to
 * the in-process tier within milliseconds and never turns into a 5xx"). Every command therefore
 * runs under a local timer as well as ioredis' own `commandTimeout`, because a client built
 * elsewhere may queue commands while disconnected or have no timeout at all; and every failure is
 * caught, counted, emitted as `'error'` and answered as a miss (get) or a no-op (set, delete).
 * @module
 */
import type { CacheStore } from './cache-store.js'
import { decodeEntry, encodeEntry, isInvalid } from './entry-codec.js'
import { createStoreEvents, type StoreOperation } from '../../observability/store-events.js'
import { boundedCommand, RedisCommandTimeoutError } from './bounded-command.js'
import type { LogSink } from '../../observability/log-sink.js'

/** Thrown by the local timer; `timedOut` in the `'error'` event says which failures were timeouts. */
export { RedisCommandTimeoutError }

export { createRedisClient, isRedisUp, untilRedisUp, type RedisClient, type RedisClientConfig, type RedisClientLogger } from './redis-client.js'

/** The three commands the store sends; an ioredis `Redis` or `Cluster` satisfies it, and so can a fake. */
export interface RedisCommands {
  getBuffer(key: string): Promise<Buffer | null>
  set(key: string, value: Buffer, millisecondsToken: 'PX', milliseconds: number): Promise<unknown>
  set(key: string, value: Buffer): Promise<unknown>
  del(key: string): Promise<number>
}

export type RedisStoreLogger = Pick<LogSink, 'info' | 'warn'>

export interface RedisStoreOptions {
  readonly redis: RedisCommands
  /** Put before every key, e.g. `cms-shield:rt:`, so stores (and other tenants of the Redis) stay apart. */
  readonly prefix: string
  /** A command not answered within this is abandoned and answered as a miss / no-op. */
  readonly commandTimeoutMs: number
  readonly now: () => number
  readonly logger?: RedisStoreLogger
}

export interface RedisStore extends CacheStore {
  readonly name: 'redis'
  /** Commands that failed or timed out, and values that did not decode, since the store was made. */
  readonly errors: number
}

const FAILED: unique symbol = Symbol('failed')

export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const { redis, prefix, commandTimeoutMs, now, logger } = options
  if (!(commandTimeoutMs > 0)) throw new TypeError(`expected commandTimeoutMs to be a positive number, got ${String(commandTimeoutMs)}`)
  const events = createStoreEvents()
  let errors = 0
  // Logged on the transitions only: while Redis is down every request fails a command.
  let failingSince: number | undefined

  function reportError(operation: StoreOperation, key: string, error: Error, timedOut: boolean, connection: boolean): void {
    errors += 1
    events.emit('error', { operation, key, error, timedOut })
    if (!connection || failingSince !== undefined) return
    failingSince = now()
    logger?.warn({ err: error, operation, timedOut }, 'redis cache tier failing; answering from memory until it recovers')
  }

  async function attempt<T>(operation: StoreOperation, key: string, command: () => Promise<T>): Promise<T | typeof FAILED> {
    try {
      const result = await boundedCommand(operation, command, commandTimeoutMs)
      if (failingSince !== undefined) {
        logger?.info({ downMs: now() - failingSince, errors }, 'redis cache tier working again')
        failingSince = undefined
      }
      return result
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught))
      const timedOut = error instanceof RedisCommandTimeoutError || /timed? ?out/i.test(error.message)
      reportError(operation, key, error, timedOut, true)
      return FAILED
    }
  }

  return {
    name: 'redis',
    on: events.on,
    async get(key) {
      const bytes = await attempt('get', key, () => redis.getBuffer(prefix + key))
      if (bytes === FAILED || bytes === null) {
        events.emit('miss', { key, reason: bytes === null ? 'absent' : 'error' })
        return undefined
      }
      const decoded = decodeEntry(bytes)
      if (isInvalid(decoded)) {
        // Written by another format or another program under our prefix; the next set replaces it.
        reportError('get', key, new Error(`redis value for ${prefix + key} is not a cache entry: ${decoded.invalid}`), false, false)
        events.emit('miss', { key, reason: 'error' })
        return undefined
      }
      events.emit('hit', { key })
      return decoded
    },
    async set(key, entry, ttlMs) {
      if (ttlMs <= 0) {
        await attempt('delete', key, () => redis.del(prefix + key))
        return
      }
      const value = encodeEntry(entry)
      // PX takes a positive integer; an unbounded ttl leaves eviction to Redis' maxmemory policy.
      await attempt('set', key, () =>
        Number.isFinite(ttlMs) ? redis.set(prefix + key, value, 'PX', Math.max(1, Math.ceil(ttlMs))) : redis.set(prefix + key, value),
      )
    },
    async delete(key) {
      await attempt('delete', key, () => redis.del(prefix + key))
    },
    get errors() {
      return errors
    },
  }
}

