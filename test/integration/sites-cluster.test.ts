/**
 * Several Sites, several instances on one Redis: each Site's tree is synced by one instance (a
 * lease per Site) and loaded by the others, so the CMS sees one listing walk per Site whatever the
 * number of instances; a PURGE of another Site's page on any instance shows on every one.
 */
import { PARTNER_HOST as PARTNER, PARTNER_OFFSET as OFFSET, partnerPages } from '../fake-wagtail/sample-layouts.js'
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})



async function eventually(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function instances(cms: FakeWagtail, env: Record<string, string>, n: number): Promise<Harness[]> {
  const started: Harness[] = []
  for (let i = 0; i < n; i++) {
    const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    cleanups.push(() => instance.close())
    started.push(instance)
  }
  await eventually(() => started.every((h) => h.app.shield.sync.current !== undefined && h.app.shield.sites.get(PARTNER)!.sync.current !== undefined), 10_000)
  return started
}

const partnerListings = (cms: FakeWagtail) => cms.requests.filter((request) => request.kind === 'list' && request.headers['host'] === PARTNER).length

describe('several Sites on several instances', () => {
  it('walks each Site\'s listing once whatever the number of instances, and every instance follows a PURGE of another Site\'s page', async () => {
    const cms = await startFakeWagtail({ pages: generateSite({ pages: 30 }), apiPath: '/api/v2/', sites: { [PARTNER]: partnerPages() } })
    cleanups.push(() => cms.close())
    const env = async () => ({
      API_PATH: '/api/v2/', SITES: PARTNER, REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-sites-${randomUUID()}:`,
      LEADER_LEASE: '900ms', REFRESH_DEBOUNCE: '20ms',
    })
    await instances(cms, await env(), 1)
    const oneWalk = partnerListings(cms)
    expect(oneWalk).toBeGreaterThan(0)
    cms.resetHits()

    const [a, b, c] = await instances(cms, await env(), 3)
    expect(partnerListings(cms)).toBe(oneWalk)

    const id = OFFSET + 3
    const url = `/api/v2/pages/${id}/`
    cms.updateSitePage(PARTNER, id, { title: 'Edited on the partner site' })
    const purge = await c!.app.inject({ method: 'PURGE', url, headers: { host: PARTNER }, remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBe(200)
    for (const h of [a!, b!, c!]) await eventually(async () => JSON.parse((await h.get(url, { host: PARTNER })).body).title === 'Edited on the partner site')
  })
})
