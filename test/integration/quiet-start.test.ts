/**
 * A healthy start is quiet: two instances sharing a Redis and a CMS that are both up (a leader,
 * then a follower) write no line at warn or above. A Redis that cannot be reached at start is
 * still reported, once, by the connection that found it down.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { PINO_WARN, eventually, observer, readyz, type LogCapture, type LogLine } from './cms-faults-support.js'
import { freePort } from '../helpers/free-port.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const observed = observer(cleanups)

const loud = (logs: LogCapture): LogLine[] => logs.lines().filter((line) => line.level >= PINO_WARN)
const messages = (logs: LogCapture): string[] => logs.lines().map((line) => line.msg)

describe('a healthy start with Redis', () => {
  it('writes no line at warn or above on the leader or the follower', async () => {
    const cms = await startFakeWagtail({ pages: generateSite() })
    cleanups.push(() => cms.close())
    const env = { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-quiet-${randomUUID()}:`, LEADER_LEASE: '900ms' }

    const leader = await observed({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    await eventually(() => leader.h.app.shield.sync.current !== undefined, 'the leader to sync', 10_000)
    const follower = await observed({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    await eventually(() => follower.h.app.shield.sync.current !== undefined, 'the follower to load the snapshot', 10_000)
    // Both instances' channels subscribed: every SUBSCRIBE either has been sent or had failed.
    const redis = new Redis(env.REDIS_URL)
    cleanups.push(async () => redis.disconnect())
    const subscribers = async () => (await redis.pubsub('NUMSUB', `${env.REDIS_PREFIX}snapshots`, `${env.REDIS_PREFIX}refresh`)) as [string, number, string, number]
    await eventually(async () => {
      const [, snapshots, , refresh] = await subscribers()
      return snapshots === 2 && refresh === 2
    }, 'both instances to subscribe both channels')

    expect((await readyz(leader.h)).body).toMatchObject({ ready: true, redis: 'up', sync: { role: 'leader' } })
    expect((await readyz(follower.h)).body).toMatchObject({ ready: true, redis: 'up', sync: { role: 'follower' } })
    expect(messages(leader.logs)).toEqual(expect.arrayContaining(['redis: connected', 'cluster: this instance syncs (it holds the lease)', 'sync: done']))
    expect(messages(follower.logs)).toContain('redis: connected')
    // From Redis at start, or when the leader announces it: whichever comes first.
    expect(messages(follower.logs).filter((msg) => msg === 'serving a stored snapshot' || msg === 'cluster: serving the snapshot the syncing instance stored')).not.toEqual([])
    expect(loud(leader.logs)).toEqual([])
    expect(loud(follower.logs)).toEqual([])
  })

  it('with Redis unreachable, warns once that it cannot connect and serves from the CMS on its own', async () => {
    const port = await freePort()
    const { h, logs } = await observed({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, LEADER_LEASE: '900ms' }, synced: false, deps: { autoSync: true } })
    await eventually(() => h.app.shield.sync.current !== undefined, 'the standalone sync', 10_000)
    expect((await readyz(h)).body).toMatchObject({ ready: true, redis: 'down', sync: { role: 'standalone' } })
    const warnings = loud(logs)
    expect(warnings.filter((line) => line.msg === 'redis: cannot connect; retrying in the background')).toMatchObject([{ err: { code: 'ECONNREFUSED' } }])
    // The channels wait for the connection instead of failing SUBSCRIBEs; they warn only if it
    // stays down past SUBSCRIBE_WARN_AFTER_MS (cluster-channel.test.ts).
    expect(warnings.filter((line) => line.msg.startsWith('cluster channel:') && /subscribe/i.test(line.msg))).toEqual([])
    expect(messages(logs)).toContain('cluster: Redis cannot say who syncs; this instance syncs on its own')
  })
})
