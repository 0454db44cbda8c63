/**
 * Three instances sharing one Redis and one CMS: one syncs, the others load its snapshots from
 * Redis. An editor's change reaches all three within 2 s of the PURGE or webhook, whichever
 * instance receives it, at the cost of the touched pages (and the listing pass when more than a
 * page's content changed); the CMS load does
 * not grow with the number of instances; and when the syncing instance dies, another takes over.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { freePort } from '../helpers/free-port.js'

const TOKEN = 'cluster-webhook-token-01'
const LEASE_MS = 900

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function origin(): Promise<FakeWagtail> {
  const cms = await startFakeWagtail({ pages: generateSite(), limitMax: 30 })
  cleanups.push(() => cms.close())
  return cms
}

async function clusterEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    REDIS_URL: await sharedRedisUrl(),
    REDIS_PREFIX: `test-cluster-${randomUUID()}:`,
    LEADER_LEASE: `${LEASE_MS}ms`,
    REFRESH_DEBOUNCE: '20ms',
    REFRESH_TOKEN: TOKEN,
    ...extra,
  }
}

/** `n` instances in front of `cms`, started one after the other; the first to start syncs. */
async function startInstances(cms: FakeWagtail, n: number, env: Record<string, string>): Promise<Harness[]> {
  const instances: Harness[] = []
  for (let i = 0; i < n; i++) {
    const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    cleanups.push(() => instance.close())
    instances.push(instance)
  }
  await eventually(async () => instances.every((h) => h.app.shield.sync.current !== undefined), 10_000)
  return instances
}

/** Polls (bounded) until `check` holds; returns how long it took. */
async function eventually(check: () => boolean | Promise<boolean>, ms = 2000): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return Date.now() - started
}

const roles = (instances: readonly Harness[]) => instances.map((h) => h.app.shield.cluster!.role)

async function detailOn(h: Harness, id: number): Promise<{ status: number; json: { title?: string; meta?: { parent?: { id: number } | null } } }> {
  const response = await h.get(`/api/v1/cms/pages/${id}/`)
  return { status: response.status, json: JSON.parse(response.body) }
}

function detailIds(cms: FakeWagtail): number[] {
  return cms.requests.filter((r) => r.kind === 'detail').map((r) => Number(/pages\/(\d+)\//.exec(r.url)![1])).sort((a, b) => a - b)
}

function pageWithChildren(h: Harness): { page: number; children: number[]; subtree: number[] } {
  const snapshot = h.app.shield.sync.current!
  const record = snapshot.pages.slice().find((p) => p.parentId !== null && p.parentId !== snapshot.rootId && (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 2)!
  return {
    page: record.id,
    children: snapshot.childrenOf.get(record.id)!.map((c) => c.id),
    subtree: snapshot.pages.slice(record.order, record.subtreeEnd).map((p) => p.id),
  }
}

function leafOf(h: Harness, cms: FakeWagtail): FakePage {
  const snapshot = h.app.shield.sync.current!
  const record = snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!
  return cms.pages().find((p) => p.id === record.id)!
}

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b)

describe('three instances, one Redis', () => {
  it('one syncs; every change reaches all three within 2 s of the PURGE or webhook, for the listing and the touched pages only', async () => {
    const cms = await origin()
    // The CMS requests counted below are those of walks that read `html_url`; a walk that derives
    // it costs as `url-derivation.test.ts` counts.
    const instances = await startInstances(cms, 3, await clusterEnv({ SYNC_DERIVE_URLS: 'false' }))
    expect(roles(instances)).toEqual(['leader', 'follower', 'follower'])
    // Followers never asked the CMS: one full sync's worth of details in all.
    expect(cms.hits.detail).toBe(89)
    const [, follower1, follower2] = instances as [Harness, Harness, Harness]

    const purge = (via: Harness, id: number) => via.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${id}/`, headers: { host: 'localhost' } })
    const everywhere = (check: (h: Harness) => Promise<boolean>) => eventually(async () => (await Promise.all(instances.map(check))).every(Boolean))

    // An edit (body only: no listing shows it), purged through a follower.
    const leaf = leafOf(instances[0]!, cms)
    cms.resetHits()
    cms.updatePage(leaf.id, { extra: { ...leaf.extra, body: '<p>cluster edit</p>' } })
    expect((await purge(follower1, leaf.id)).statusCode).toBe(200)
    await everywhere(async (h) => (await h.get(`/api/v1/cms/pages/${leaf.id}/`)).body.includes('cluster edit'))
    // Refreshed in place: the page's own listing item and its detail, no listing pass.
    expect(cms.hits).toMatchObject({ list: 1, detail: 1, total: 2 })
    expect(detailIds(cms)).toEqual([leaf.id])

    // An unpublish: the page goes, its children lose their parent.
    const { page: parent, children } = pageWithChildren(instances[0]!)
    cms.resetHits()
    cms.updatePage(parent, { live: false })
    await purge(follower2, parent)
    await everywhere(async (h) => (await detailOn(h, parent)).status === 404 && (await detailOn(h, children[0]!)).json.meta?.parent === null)
    // Its own item (the listing no longer shows it), then the listing pass (3 windows).
    expect(cms.hits.list).toBe(4)
    // The listing no longer holds the purged page, so it is not asked for; its children are read
    // again for their new `parent`.
    expect(detailIds(cms)).toEqual(sorted(children))
    cms.updatePage(parent, { live: true })
    await purge(follower1, parent)
    await everywhere(async (h) => (await detailOn(h, parent)).status === 200)

    // A move (Wagtail purges nothing on a move: the webhook names the page).
    const moved = pageWithChildren(instances[0]!)
    const tree = instances[0]!.app.shield.sync.current!
    const movedParent = tree.byId.get(moved.page)!.parentId
    const target = tree.pages.slice().find((p) => p.parentId === tree.rootId && p.id !== movedParent && !moved.subtree.includes(p.id))!
    cms.resetHits()
    cms.movePage(moved.page, target.id)
    const hook = await follower2.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${TOKEN}` }, payload: { ids: [moved.page] } })
    expect(hook.statusCode).toBe(202)
    await everywhere(async (h) => (await detailOn(h, moved.page)).json.meta?.parent?.id === target.id)
    expect(cms.hits.list).toBe(3)
    expect(detailIds(cms)).toEqual(sorted(moved.subtree))

    // A delete.
    const doomed = leafOf(instances[0]!, cms)
    cms.resetHits()
    cms.removePage(doomed.id)
    await purge(follower1, doomed.id)
    await everywhere(async (h) => (await detailOn(h, doomed.id)).status === 404)
    // Its own item (gone), then the listing pass.
    expect(cms.hits.list).toBe(4)
    expect(detailIds(cms)).toEqual([]) // the listing shows it gone: nothing to fetch

    // A create.
    const sibling = leafOf(instances[0]!, cms)
    cms.resetHits()
    cms.addPage({ ...sibling, id: 990_500, slug: 'created-in-cluster', title: 'Created in cluster' })
    await purge(follower2, 990_500)
    await everywhere(async (h) => (await detailOn(h, 990_500)).json.title === 'Created in cluster')
    expect(cms.hits.list).toBe(3)
    expect(detailIds(cms)).toEqual([990_500])

    // Every instance serves the same bytes.
    const bodies = await Promise.all(instances.map(async (h) => (await h.get('/api/v1/cms/pages/?limit=30')).body))
    expect(new Set(bodies).size).toBe(1)
    expect(roles(instances)).toEqual(['leader', 'follower', 'follower'])
  })

  it('three instances ask the CMS no more than one does in the same time (±5%)', async () => {
    const [cmsOne, cmsThree] = await Promise.all([origin(), origin()])
    const env = { SYNC_INTERVAL: '1s' }
    // Both setups run side by side over the same wall-clock window.
    const [one, three] = await Promise.all([
      startInstances(cmsOne, 1, await clusterEnv(env)),
      startInstances(cmsThree, 3, await clusterEnv(env)),
    ])
    await new Promise((resolve) => setTimeout(resolve, 4500))
    const single = cmsOne.hits.total
    const cluster = cmsThree.hits.total
    expect(roles(one)).toEqual(['leader'])
    expect(roles(three).filter((r) => r === 'leader')).toHaveLength(1)
    expect(cluster).toBeLessThanOrEqual(Math.ceil(single * 1.05))
    // …and the loop really ran: a full sync and several listing passes.
    expect(single).toBeGreaterThan(89 + 3 * 3)
  })

  it('refuses an unauthorised PURGE and webhook on any instance, and nothing changes', async () => {
    const cms = await origin()
    const instances = await startInstances(cms, 3, await clusterEnv({ PURGE_ALLOW: '10.0.0.0/8' }))
    const leaf = leafOf(instances[0]!, cms)
    cms.updatePage(leaf.id, { extra: { ...leaf.extra, body: '<p>must not show</p>' } })
    cms.resetHits()
    for (const h of instances) {
      expect((await h.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${leaf.id}/` })).statusCode).toBe(403)
      expect((await h.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: 'Bearer wrong' }, payload: { all: true } })).statusCode).toBe(401)
    }
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(cms.hits.total).toBe(0)
    for (const h of instances) expect((await h.get(`/api/v1/cms/pages/${leaf.id}/`)).body).not.toContain('must not show')
  })
})

describe('when the syncing instance dies', () => {
  it('a follower\'s /readyz ages from the syncing instance\'s last good sync, which it announces even when nothing changed', async () => {
    const cms = await origin()
    const env = await clusterEnv()
    // The leader's first sync ran ten minutes ago; its second, which finds nothing changed, runs now.
    let leaderSkewMs = -600_000
    const leader = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true, now: () => Date.now() + leaderSkewMs } })
    cleanups.push(() => leader.close())
    await eventually(() => leader.app.shield.sync.current !== undefined, 10_000)
    const follower = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    cleanups.push(() => follower.close())
    await eventually(() => follower.app.shield.sync.current?.fingerprint === leader.app.shield.sync.current!.fingerprint, 10_000)
    expect(roles([leader, follower])).toEqual(['leader', 'follower'])
    const readyz = async (h: Harness) => JSON.parse((await h.get('/readyz')).body) as { snapshot: { ageSeconds: number }; sync: Record<string, unknown> }
    expect((await readyz(follower)).snapshot.ageSeconds).toBeGreaterThanOrEqual(599)

    leaderSkewMs = 0
    const version = leader.app.shield.sync.current!.version
    expect(await leader.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: false })
    await eventually(async () => (await readyz(follower)).snapshot.ageSeconds <= 2)
    expect((await readyz(follower)).sync).toMatchObject({
      role: 'follower', lastSuccessAt: null, leaderLastSuccessAt: new Date(leader.app.shield.sync.status.lastSuccessAt!).toISOString(),
    })
    // Nothing was loaded again: the same snapshot, now known to be current.
    expect(follower.app.shield.sync.current!.version).toBe(version)
    expect((await readyz(leader)).sync).toMatchObject({ role: 'leader', leaderLastSuccessAt: null })
    // Only the instance that syncs runs the safety net.
    expect((await readyz(leader)).sync.net).toMatchObject({ budget: 0.005 })
    expect((await readyz(follower)).sync.net).toBeNull()
  })

  it('the leader reads the listing when its pub/sub connection comes back, so a rename whose PURGE was lost meanwhile still arrives', async () => {
    const cms = await origin()
    const env = await clusterEnv()
    const [leader, follower] = (await startInstances(cms, 2, env)) as [Harness, Harness]
    expect(roles([leader, follower])).toEqual(['leader', 'follower'])
    const leaf = leafOf(leader, cms)
    const title = `${leaf.title} (renamed while pub/sub was down)`
    // The editor's PURGE went out while the leader's subscriber was away: nobody sends it now.
    cms.updatePage(leaf.id, { title })
    // Drops exactly the leader's subscriber connection, server side, as a network blip or a Redis failover would.
    const subscriber = leader.app.shield.shared!.subscriber as Redis
    const port = subscriber.stream.localPort
    const admin = new Redis(env.REDIS_URL!, { lazyConnect: true })
    cleanups.push(async () => void admin.disconnect())
    const clients = String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
    const id = new RegExp(`^id=(\\d+) addr=127\\.0\\.0\\.1:${port} `, 'm').exec(clients)?.[1]
    expect(id).toBeDefined()
    expect(await admin.call('CLIENT', 'KILL', 'ID', id!)).toBe(1)
    await eventually(async () => (await detailOn(follower, leaf.id)).json.title === title, 5_000)
    expect((await detailOn(leader, leaf.id)).json.title).toBe(title)
  })

  it('another takes over within the lease time, and no instance stops serving', async () => {
    const cms = await origin()
    // The new leader's walk finds the edit below, unannounced: every second, not paced by a budget.
    const env = await clusterEnv({ SYNC_INTERVAL: '1s', SYNC_BUDGET: '0' })
    const port = await freePort()
    const leader = spawnInstance({ ...env, UPSTREAM_URL: cms.url, BASE_URL: 'https://shield.example', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
    cleanups.push(async () => void leader.kill('SIGKILL'))
    await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.json(), () => ({}))) as { sync?: { role?: string } }).sync?.role === 'leader', 15_000)
    const followers = await startInstances(cms, 2, env)
    expect(roles(followers)).toEqual(['follower', 'follower'])

    // Readers keep asking both followers while the leader dies.
    let failures = 0
    let served = 0
    let reading = true
    const readers = followers.map(async (h) => {
      while (reading) {
        const response = await h.get('/api/v1/cms/pages/?limit=30')
        if (response.status === 200) served++
        else failures++
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    })
    const killedAt = Date.now()
    leader.kill('SIGKILL')
    const takeover = await eventually(() => roles(followers).includes('leader'), LEASE_MS * 3)
    // The new leader syncs: an edit shows on both followers' side.
    const leaf = leafOf(followers[0]!, cms)
    cms.updatePage(leaf.id, { title: `${leaf.title} after takeover` })
    await eventually(async () => (await Promise.all(followers.map((h) => detailOn(h, leaf.id)))).every((d) => d.json.title === `${leaf.title} after takeover`), 5000)
    reading = false
    await Promise.all(readers)
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(takeover)
    // The lease expires at most LEASE_MS after the last renewal; the next tick (a third of it) takes it.
    expect(takeover).toBeLessThanOrEqual(LEASE_MS + LEASE_MS / 3 + 500)
    expect(roles(followers).filter((r) => r === 'leader')).toHaveLength(1)
    expect(failures).toBe(0)
    expect(served).toBeGreaterThan(10)
  })
})

function spawnInstance(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' })
}

