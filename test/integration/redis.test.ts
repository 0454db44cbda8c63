/**
 * With Redis: instances share read-through entries and one CMS request per key; a Redis failure
 * never reaches a client; a new instance starts warm from the stored snapshot even with the CMS down.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { startRedis, sharedRedisUrl, type RedisServer } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

const cleanup: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined)
})

async function origin(options: Parameters<typeof startFakeWagtail>[0] = { pages: generateSite() }): Promise<FakeWagtail> {
  const started = await startFakeWagtail(options)
  cleanup.push(() => started.close())
  return started
}

async function instance(env: Record<string, string>, sharedOrigin?: FakeWagtail, synced = true): Promise<Harness> {
  const h = await startShield({ env, ...(sharedOrigin ? { sharedOrigin } : {}), synced })
  cleanup.push(() => h.close())
  return h
}

/** A Redis key space of its own per test, on the shared Redis. */
async function redisEnv(): Promise<Record<string, string>> {
  return { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-${randomUUID()}:` }
}

describe('two instances sharing Redis', () => {
  it('share read-through entries: the second instance asks the CMS nothing', async () => {
    const cms = await origin()
    const env = await redisEnv()
    const a = await instance(env, cms)
    const b = await instance(env, cms)
    const url = '/api/v1/cms/pages/?search=versicherung&limit=5'
    const first = await a.get(url)
    cms.resetHits()
    const second = await b.get(url)
    expect(cms.hits.total).toBe(0)
    expect(second.body).toBe(first.body)
    expect(second.headers['etag']).toBe(first.headers['etag'])
  })

  it('send 200 concurrent requests for a cold key across both instances to the CMS once', async () => {
    const cms = await origin()
    const env = await redisEnv()
    const a = await instance(env, cms)
    const b = await instance(env, cms)
    await Promise.all([a.app.shield.shared!.flight.ready(), b.app.shield.shared!.flight.ready()])
    cms.setLatency(250)
    cms.resetHits()
    const url = '/api/v1/cms/pages/?order=-title&limit=10'
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).get(url)))
    expect(cms.hits.total).toBe(1)
    expect(new Set(responses.map((r) => r.body)).size).toBe(1)
    expect(responses.every((r) => r.status === 200)).toBe(true)
  })
})

describe('Redis failures never reach a client', () => {
  it('serves every request while Redis is killed, and uses Redis again once it is back', async () => {
    const redis: RedisServer = await startRedis()
    cleanup.push(() => redis.stop())
    const cms = await origin()
    const env = { REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT: '100ms' }
    const a = await instance(env, cms)
    const b = await instance(env, cms)
    await a.get('/api/v1/cms/pages/?search=a')

    await redis.kill()
    const urls = ['/api/v1/cms/pages/', '/api/v1/cms/pages/?child_of=root', '/api/v1/cms/pages/?search=a', '/api/v1/cms/pages/?search=during-outage']
    const failures: number[] = []
    for (let round = 0; round < 5; round++) {
      for (const h of [a, b]) for (const url of urls) {
        const response = await h.get(url)
        if (response.status !== 200) failures.push(response.status)
      }
    }
    expect(failures).toEqual([])
    const degraded = JSON.parse((await a.get('/readyz')).body)
    expect(degraded).toMatchObject({ ready: true, redis: 'down' })
    expect(degraded.redisErrors).toBeGreaterThan(0)

    await redis.restart()
    const deadline = Date.now() + 10_000
    while (!(a.app.shield.shared!.isUp() && b.app.shield.shared!.isUp()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(JSON.parse((await a.get('/readyz')).body).redis).toBe('up')
    await Promise.all([a.app.shield.shared!.flight.ready(), b.app.shield.shared!.flight.ready()])
    await a.get('/api/v1/cms/pages/?search=after-restart')
    cms.resetHits()
    await b.get('/api/v1/cms/pages/?search=after-restart')
    expect(cms.hits.total).toBe(0)
  })

  it('starts and serves with Redis down from the beginning', async () => {
    const redis = await startRedis()
    await redis.stop()
    const cms = await origin()
    const h = await instance({ REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT: '100ms' }, cms)
    expect((await h.get('/api/v1/cms/pages/?search=x')).status).toBe(200)
    expect(JSON.parse((await h.get('/readyz')).body)).toMatchObject({ ready: true, redis: 'down' })
  })
})

describe('warm start', () => {
  it('serves identical bodies from the snapshot in Redis with the CMS gone', async () => {
    const cms = await origin()
    const env = await redisEnv()
    const first = await instance(env, cms)
    await first.app.shield.persistence!.save(first.app.shield.sync.current!)
    const urls = ['/api/v1/cms/pages/', '/api/v1/cms/pages/?child_of=root&show_in_menus=true&limit=250', `/api/v1/cms/pages/${first.app.shield.sync.current!.pages.at(3)!.id}/`]
    const before = await Promise.all(urls.map((url) => first.get(url)))
    await first.close()
    await cms.close()

    const second = await instance(env, cms, false)
    const ready = await second.get('/readyz')
    expect(ready.status).toBe(200)
    const after = await Promise.all(urls.map((url) => second.get(url)))
    expect(after.map((r) => r.body)).toEqual(before.map((r) => r.body))
    expect(after.map((r) => r.headers['etag'])).toEqual(before.map((r) => r.headers['etag']))
  })

  it('serves from SNAPSHOT_FILE without Redis, and never loads a snapshot of another CMS', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cms-shield-')), 'snapshot.bin')
    const cms = await origin()
    const first = await instance({ SNAPSHOT_FILE: file }, cms)
    await first.app.shield.persistence!.save(first.app.shield.sync.current!)
    const body = (await first.get('/api/v1/cms/pages/')).body
    await first.close()

    const warm = await instance({ SNAPSHOT_FILE: file }, cms, false)
    expect((await warm.get('/readyz')).status).toBe(200)
    expect((await warm.get('/api/v1/cms/pages/')).body).toBe(body)

    const otherCms = await origin()
    const other = await instance({ SNAPSHOT_FILE: file }, otherCms, false)
    expect((await other.get('/readyz')).status).toBe(503)
  })
})
