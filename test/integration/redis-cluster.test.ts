/**
 * cms-shield over a real Redis Cluster (`REDIS_CLUSTER_NODES`): three private masters on
 * loopback. Everything the cluster shares goes through it as it does through one Redis: the lease,
 * the snapshot and its patches (chunked, read one key at a time since keys lie in different
 * slots), pub/sub, and the read-through cache; and a new instance starts warm from it.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createRedisClient, untilRedisUp } from '../../src/cache/stores/redis-client.js'
import { generateSite, startFakeWagtail, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { eventually } from '../helpers/eventually.js'
import { startRedisCluster, type RedisCluster } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

let redis: RedisCluster
beforeAll(async () => {
  redis = await startRedisCluster(3)
}, 30_000)
afterAll(async () => {
  await redis?.stop()
})

async function start(cms: FakeWagtail, env: Record<string, string>): Promise<Harness> {
  const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
  cleanups.push(() => instance.close())
  return instance
}

const titleOn = async (h: Harness, id: number) => (JSON.parse((await h.get(`/api/v1/cms/pages/${id}/`)).body) as { title?: string }).title

describe('over a Redis Cluster', () => {
  it('connects without a reconnect, and is up only when a read across every slot succeeds at once', async () => {
    const keys = Array.from({ length: 48 }, (_, i) => `test-cluster-up-${i}`)
    for (let attempt = 0; attempt < 5; attempt++) {
      const client = createRedisClient({ cluster: redis.nodes, commandTimeoutMs: 1000, connectTimeoutMs: 1000 })
      cleanups.push(async () => void client.disconnect())
      let reconnects = 0
      client.on('reconnecting', () => reconnects++)
      expect(await untilRedisUp(client, 3000)).toBe(true)
      // No offline queue: a node still connecting would refuse its keys.
      expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(keys.map(() => null))
      expect(reconnects).toBe(0)
    }
  })

  it('shares one sync, each edit as a patch and the read-through cache; a new instance starts warm with the CMS down', async () => {
    const cms = await startFakeWagtail({ pages: generateSite() })
    cleanups.push(() => cms.close())
    const env = { REDIS_CLUSTER_NODES: redis.nodes, REDIS_PREFIX: `test-cluster-${randomUUID()}:`, LEADER_LEASE: '900ms', REFRESH_DEBOUNCE: '20ms' }

    const leader = await start(cms, env)
    await eventually(() => leader.app.shield.cluster!.role === 'leader' && leader.app.shield.sync.current !== undefined, 'the first instance leads and serves')
    const follower = await start(cms, env)
    await eventually(() => follower.app.shield.cluster!.role === 'follower' && follower.app.shield.sync.current?.fingerprint === leader.app.shield.sync.current!.fingerprint, 'the second follows with the leader\'s snapshot')

    // An edit PURGEd at the follower: the leader refreshes the one page, stores a patch, and the
    // follower applies it without reading the whole snapshot again.
    const page = cms.pages().find((p) => p.parentId !== null && cms.pages().every((other) => other.parentId !== p.id)) as FakePage
    const wholeReads = vi.spyOn(follower.app.shield.shared!.snapshotTarget, 'read')
    cms.resetHits()
    cms.requests.length = 0
    cms.updatePage(page.id, { title: 'Edited over the Cluster' })
    const purge = await follower.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${page.id}/`, remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBe(200)
    await eventually(async () => (await titleOn(leader, page.id)) === 'Edited over the Cluster' && (await titleOn(follower, page.id)) === 'Edited over the Cluster', 'both serve the edit')
    expect(cms.requests.filter((r) => r.kind === 'detail').map((r) => r.url)).toEqual([`/api/v1/cms/pages/${page.id}/`])
    expect(wholeReads).not.toHaveBeenCalled()
    expect(follower.app.shield.sync.current!.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)

    // A query the snapshot cannot answer: asked of the CMS once, by whichever instance is first.
    cms.resetHits()
    const search = '/api/v1/cms/pages/?search=guide'
    const first = await leader.get(search)
    const second = await follower.get(search)
    expect(second.status).toBe(200)
    expect(second.body).toBe(first.body)
    expect(cms.hits.total).toBe(1)

    // With the CMS gone, a new instance serves the leader's snapshot, the edit included, as soon
    // as it has started.
    await cms.close()
    const late = await start(cms, env)
    expect(late.app.shield.sync.current?.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)
    expect(await titleOn(late, page.id)).toBe('Edited over the Cluster')
  }, 40_000)
})
