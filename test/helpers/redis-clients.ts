/**
 * Connections for suites that drive a module against a real Redis: made as the app makes them
 * (`createRedisClient`, no offline queue, the suite's command timeout), ready before use, and
 * disconnected after each test. Plus `until`, the bounded poll those suites wait with.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { createRedisClient, isRedisUp, type RedisClient } from '../../src/cache/stores/redis-client.js'
import { sharedRedisUrl } from './redis-server.js'

/** Polls `probe` every 10 ms until it holds; throws naming `what` after `withinMs`. */
export async function until(what: string, probe: () => boolean | Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(10)
  }
}

export interface SuiteClients {
  /** A new connection to `url`, once it is ready (at most 5 s). */
  connect(url: string): Promise<RedisClient>
  /** Every connection of the running test. */
  readonly all: readonly RedisClient[]
}

/** Call inside `describe` (or at a file's top level): registers the disconnecting `afterEach`. */
export function suiteRedisClients(commandTimeoutMs: number): SuiteClients {
  const clients: RedisClient[] = []
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect()
  })
  return {
    async connect(url) {
      const client = createRedisClient({ url, commandTimeoutMs, connectTimeoutMs: 1000 })
      clients.push(client)
      await until('redis ready', () => isRedisUp(client), 5000)
      return client
    },
    all: clients,
  }
}

export interface SuiteSharedRedis {
  /** The shared Redis (`sharedRedisUrl()`); read inside tests. */
  readonly url: string
  /** A plain connection to it, for looking at keys. */
  readonly admin: Redis
  /** A key of its own for the running test (`test:<uuid>:<name>`), deleted after it. */
  key(name: string): string
}

/**
 * The shared Redis for a suite: its URL and an admin connection (from before the suite to after
 * it), and unique keys deleted after each test. Call inside `describe`, before the suite's own
 * `afterEach` (which then runs first, stopping what still writes the keys).
 */
export function suiteSharedRedis(): SuiteSharedRedis {
  let url: string | undefined
  let admin: Redis | undefined
  const keys: string[] = []
  beforeAll(async () => {
    url = await sharedRedisUrl()
    admin = new Redis(url)
  })
  afterEach(async () => {
    const used = keys.splice(0)
    if (used.length > 0) await admin?.del(...used)
  })
  afterAll(() => {
    admin?.disconnect()
  })
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('suiteSharedRedis: read before the suite started')
    return value
  }
  return {
    get url() {
      return started(url)
    },
    get admin() {
      return started(admin)
    },
    key(name) {
      const key = `test:${randomUUID()}:${name}`
      keys.push(key)
      return key
    },
  }
}
