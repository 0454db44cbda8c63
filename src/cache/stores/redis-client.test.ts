import { Cluster, Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { isProxyError } from '../../errors.js'
import { createRedisClient, parseAddresses, reconnectDelayMs } from './redis-client.js'

const timeouts = { commandTimeoutMs: 250, connectTimeoutMs: 1000 }

describe('createRedisClient', () => {
  it('builds a fail-fast standalone client from REDIS_URL', () => {
    // Port 1: nothing listens; the client keeps reconnecting in the background until disconnected.
    const client = createRedisClient({ url: 'redis://:secret@127.0.0.1:1/2', ...timeouts })
    try {
      expect(client).toBeInstanceOf(Redis)
      const { options } = client as Redis
      expect(options).toMatchObject({ host: '127.0.0.1', port: 1, db: 2, password: 'secret', enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 250, connectTimeout: 1000, lazyConnect: false })
    } finally {
      client.disconnect()
    }
  })

  it('builds Sentinel and Cluster clients', () => {
    const sentinel = createRedisClient({ sentinels: '10.0.0.1:26379, 10.0.0.2', sentinelName: 'mymaster', password: 'pw', ...timeouts })
    const cluster = createRedisClient({ cluster: '10.0.0.1:7000,[::1]:7001', ...timeouts })
    try {
      expect((sentinel as Redis).options).toMatchObject({ name: 'mymaster', password: 'pw', sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '10.0.0.2', port: 26379 }] })
      expect(cluster).toBeInstanceOf(Cluster)
      expect((cluster as Cluster).options).toMatchObject({ enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 0, commandTimeout: 250 } })
    } finally {
      sentinel.disconnect()
      cluster.disconnect()
    }
  })

  it.each([
    [{}, /no Redis configured/],
    [{ url: 'http://cache:6379' }, /REDIS_URL/],
    [{ sentinels: 'a:26379' }, /REDIS_SENTINEL_NAME/],
    [{ cluster: 'a:99999' }, /REDIS_CLUSTER_NODES.*a:99999/],
  ])('refuses %j with CONFIG_INVALID', (config, message) => {
    let caught: unknown
    try {
      createRedisClient({ ...config, ...timeouts }).disconnect()
    } catch (error) {
      caught = error
    }
    expect(isProxyError(caught, 'CONFIG_INVALID')).toBe(true)
    expect((caught as Error).message).toMatch(message)
  })

  it('reconnects forever, 100 ms more per attempt, at most 2 s apart', () => {
    expect([1, 2, 10, 20, 1000].map(reconnectDelayMs)).toEqual([100, 200, 1000, 2000, 2000])
  })

  it('parses host:port lists, IPv6 in brackets, default ports', () => {
    expect(parseAddresses('X', 'a:1, b ,[::1]:3', 26379)).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 26379 },
      { host: '::1', port: 3 },
    ])
  })
})
