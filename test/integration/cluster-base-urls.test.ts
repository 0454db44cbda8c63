/**
 * Instances with different BASE_URLs share one Redis (a rolling deploy that changes it, or one
 * cluster behind two public names): the CMS is synced once, and every instance serves the shared
 * snapshot with its own BASE_URL in every `detail_url` and find's `Location`.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { eventually } from '../helpers/eventually.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})


const BASES = ['https://old.example.com', 'https://new.example.com/content'] as const

describe('instances with different BASE_URLs sharing Redis', () => {
  it('are both ready, each answering with its own BASE_URL, while only one of them syncs the CMS', async () => {
    const cms = await startFakeWagtail({ pages: generateSite() })
    cleanups.push(() => cms.close())
    const env = { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-bases-${randomUUID()}:`, LEADER_LEASE: '900ms', REFRESH_DEBOUNCE: '20ms' }
    const instances: Harness[] = []
    for (const base of BASES) {
      const instance = await startShield({ sharedOrigin: cms, env: { ...env, BASE_URL: base }, synced: false, deps: { autoSync: true } })
      cleanups.push(() => instance.close())
      instances.push(instance)
    }
    await eventually(() => instances.every((h) => h.app.shield.sync.current !== undefined), 'both instances serve a snapshot', 10_000)
    for (const h of instances) expect((await h.get('/readyz')).status).toBe(200)
    const roles = instances.map((h) => h.app.shield.cluster!.role).sort()
    expect(roles).toEqual(['follower', 'leader'])
    const leader = instances.find((h) => h.app.shield.cluster!.role === 'leader')!
    const follower = instances.find((h) => h !== leader)!
    // Both serve the one tree the leader synced: same fingerprint.
    expect(follower.app.shield.sync.current!.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)

    const page = cms.pages().find((p) => p.parentId !== null && p.slug !== '')!
    for (const [i, h] of instances.entries()) {
      const base = h.app.shield.config.baseUrl
      expect(base).toBe(BASES[i])
      const other = BASES[1 - i]!
      const detail = await h.get(`/api/v1/cms/pages/${page.id}/`)
      expect(detail.status).toBe(200)
      const json = JSON.parse(detail.body) as { meta: { detail_url: string; parent: { meta: { detail_url: string } } | null } }
      expect(json.meta.detail_url).toBe(`${base}/api/v1/cms/pages/${page.id}/`)
      if (json.meta.parent) expect(json.meta.parent.meta.detail_url.startsWith(`${base}/api/v1/cms/pages/`)).toBe(true)
      const list = await h.get(`/api/v1/cms/pages/?child_of=${page.parentId}`)
      expect(list.body).toContain(`"${base}/api/v1/cms/pages/`)
      expect(list.body).not.toContain(other)
      expect(detail.body).not.toContain(other)
      const find = await h.get(`/api/v1/cms/pages/find/?id=${page.id}`)
      expect(find.status).toBe(302)
      expect(String(find.headers['location'])).toMatch(new RegExp(`^${base.replace(/[.]/g, '\\.')}/api/v1/cms/pages/${page.id}/`))
    }

    // An edit: the leader syncs it once, the follower serves it on its own BASE_URL.
    cms.resetHits()
    cms.updatePage(page.id, { title: 'Edited behind two names' })
    const purge = await follower.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${page.id}/`, remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBeLessThan(300)
    for (const h of instances) {
      await eventually(async () => (JSON.parse((await h.get(`/api/v1/cms/pages/${page.id}/`)).body) as { title: string }).title === 'Edited behind two names', 'the edit is served', 5000)
    }
    const edited = JSON.parse((await follower.get(`/api/v1/cms/pages/${page.id}/`)).body) as { meta: { detail_url: string } }
    expect(edited.meta.detail_url).toBe(`${follower.app.shield.config.baseUrl}/api/v1/cms/pages/${page.id}/`)
    // One sync's worth of CMS requests, not one per BASE_URL: the follower asked the CMS nothing.
    const detailsFetched = cms.requests.filter((r) => r.kind === 'detail' && r.url.includes(`/pages/${page.id}/`)).length
    expect(detailsFetched).toBe(1)

    // Each records the same fingerprint as the one it serves, so the syncing instance can tell
    // when both serve the edit (before it purges a CDN).
    const admin = new Redis(env.REDIS_URL)
    cleanups.push(async () => void admin.disconnect())
    const edit = leader.app.shield.sync.current!.fingerprint
    await eventually(async () => {
      const served = Object.values(await admin.hgetall(`${env.REDIS_PREFIX}served`)).map((text) => (JSON.parse(text) as { fingerprint: string }).fingerprint)
      return served.length === 2 && served.every((fingerprint) => fingerprint === edit)
    }, 'both record the edited snapshot as served', 5000)
  })
})
