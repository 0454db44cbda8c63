/**
 * A PURGE of an image's or document's API URL, taken by any instance on one Redis, makes every
 * instance ask the CMS again for that endpoint's answers (they share the new generation over
 * pub/sub), an instance started afterwards too (it reads the generation from Redis), and purges the
 * endpoint's key at the CDN.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeMedia, type FakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const media = (title: string): FakeMedia => ({
  images: [{ id: 5, title, file: 'original_images/lighthouse.png', width: 300, height: 900 }],
  documents: [{ id: 3, title: 'Price list', file: 'documents/prices.pdf' }],
})

async function eventually(check: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function start(cms: FakeWagtail, env: Record<string, string>): Promise<Harness> {
  const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
  cleanups.push(() => instance.close())
  await eventually(() => instance.app.shield.sync.current !== undefined, 10_000)
  return instance
}

const titleOn = async (h: Harness) => JSON.parse((await h.get('/api/v2/images/5/')).body).title as string

describe('a PURGE of one of the router\'s other endpoints, with several instances on one Redis', () => {
  it('is followed by every instance, including one started after it, and the endpoint\'s answers are shared in Redis', async () => {
    const cms = await startFakeWagtail({ pages: generateSite({ pages: 30 }), apiPath: '/api/v2/', media: media('Lighthouse') })
    cleanups.push(() => cms.close())
    const env = {
      API_PATH: '/api/v2/', API_ENDPOINTS: 'images,documents',
      REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-endpoints-${randomUUID()}:`, LEADER_LEASE: '900ms', CACHE_TTL: '1h',
    }
    const [a, b] = [await start(cms, env), await start(cms, env)]
    cms.resetHits()
    expect(await titleOn(a)).toBe('Lighthouse')
    expect(await titleOn(b)).toBe('Lighthouse') // from the shared tier
    expect(cms.hits.endpoint).toBe(1)

    cms.setMedia(media('Lighthouse at night'))
    const purge = await b!.app.inject({ method: 'PURGE', url: '/api/v2/images/5/', remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBe(200)
    expect(await titleOn(b!)).toBe('Lighthouse at night')
    await eventually(async () => (await titleOn(a!)) === 'Lighthouse at night')
    // b's miss is the one CMS request of the new generation: a reads it from Redis.
    expect(cms.hits.endpoint).toBe(2)
    // Until it has read the recorded generation, a new instance asks the CMS rather than Redis.
    const c = await start(cms, env)
    expect(await titleOn(c)).toBe('Lighthouse at night')
    // Documents were not purged: still the one answer stored before.
    expect((await a!.get('/api/v2/documents/3/')).headers['cache-status']).toBe('cms-shield; fwd=miss; stored')
    expect((await c.get('/api/v2/documents/3/')).headers['cache-status']).toMatch(/^cms-shield; hit/)
  })
})
