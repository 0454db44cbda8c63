/**
 * Connections for suites that drive a module against a real Redis: made as the app makes them
 * (`createRedisClient`, no offline queue, the suite's command timeout), ready before use, and
 * disconnected after each test. Plus `until`, the bounded poll those suites wait with.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach } from 'vitest'
import { createRedisClient, isRedisUp, type RedisClient } from '../../src/cache/stores/redis-client.js'

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
