import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSharedTier, type SharedTier } from '../../src/cache/shared-tier.js'
import { loadConfig } from '../../src/config/load-config.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'

describe('a snapshot in Redis', () => {
  let tier: SharedTier

  beforeAll(async () => {
    const config = loadConfig({
      UPSTREAM_URL: 'http://127.0.0.1:9/api/v2/',
      BASE_URL: 'http://127.0.0.1:8080',
      REDIS_URL: await sharedRedisUrl(),
      // The tightest cache bound there is: far shorter than moving the snapshot below takes.
      REDIS_COMMAND_TIMEOUT: '10ms',
      REDIS_PREFIX: `snapshot-size-${process.pid}-${Date.now()}:`,
    })
    const silent = { warn: () => undefined, error: () => undefined, info: () => undefined, debug: () => undefined }
    tier = createSharedTier(config, silent as never, Date.now)!
    expect(await tier.waitUntilUp(5_000)).toBe(true)
  })

  afterAll(async () => {
    await tier?.close()
  })

  it('is written and read whole although it takes longer than a cache command may', async () => {
    // 48 MiB of noise: incompressible, as a snapshot of 100,000 pages is about that large.
    const snapshot = randomBytes(48 * 1024 * 1024)
    await tier.snapshotTarget.write(snapshot)
    const read = await tier.snapshotTarget.read()
    expect(read?.length).toBe(snapshot.length)
    expect(read?.equals(snapshot)).toBe(true)
    // UNLINK frees the value off Redis's main thread: a DEL of it could outlast the 10 ms bound.
    await tier.client.unlink(tier.snapshotTarget.name.replace(/^redis:/, '')).catch(() => undefined)
  })
})
