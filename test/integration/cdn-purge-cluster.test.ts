/**
 * Confirm, then purge (docs/architecture.md#purging-a-cdn-after-every-instance-serves): three
 * instances share one Redis and one CMS, with a Varnish in front stood in for by a recorder of
 * PURGE requests. The syncing instance purges an edit only once every live instance serves it —
 * never while a follower still serves the old tree, which the CDN would fetch and cache again —
 * exactly once, and a follower that died holds it no longer than its record takes to age out.
 * While Redis is down every instance syncs and purges its own change without waiting.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { freePort } from '../helpers/free-port.js'
import { startVarnishRecorder, type FakePurgeApi, type RecordedPurge } from '../helpers/fake-purge-apis.js'
import { ownRedisServer, sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { eventually } from '../helpers/eventually.js'

const LEASE_MS = 900
/** Far longer than any wait here should take: a purge sent before it did not time out. */
const PURGE_WAIT_MS = 30_000

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})


const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Setup {
  readonly cms: FakeWagtail
  readonly varnish: FakePurgeApi
  /** The PURGEs naming `key`, each with when it arrived (`Date.now()`). */
  naming(key: string): Array<RecordedPurge & { at: number }>
  readonly env: Record<string, string>
  /** What each instance recorded in Redis: the fingerprint it serves, and when it last said so. */
  records(): Promise<Record<string, { fingerprint: string; at: number }>>
  /** Who serves which fingerprint, as recorded in Redis. */
  served(): Promise<Record<string, string>>
}

async function setup(redisUrl?: string, extra: Record<string, string> = {}): Promise<Setup> {
  const cms = await startFakeWagtail({ pages: generateSite() })
  cleanups.push(() => cms.close())
  // Every request to it is a PURGE: the n-th arrival time is the n-th request's.
  const arrivals: number[] = []
  const varnish = await startVarnishRecorder({ onPurge: () => void arrivals.push(Date.now()) })
  cleanups.push(() => varnish.close())
  const env = {
    REDIS_URL: redisUrl ?? (await sharedRedisUrl()),
    REDIS_PREFIX: `test-cdn-cluster-${randomUUID()}:`,
    LEADER_LEASE: `${LEASE_MS}ms`,
    REFRESH_DEBOUNCE: '20ms',
    CDN_PURGE_VARNISH: varnish.url,
    CDN_PURGE_WAIT: `${PURGE_WAIT_MS}ms`,
    ...extra,
  }
  const admin = new Redis(env.REDIS_URL)
  admin.on('error', () => undefined) // a test that kills Redis reads nothing after
  cleanups.push(async () => void admin.disconnect())
  const records = async () => {
    const fields = await admin.hgetall(`${env.REDIS_PREFIX}served`)
    return Object.fromEntries(Object.entries(fields).map(([owner, text]) => [owner, JSON.parse(text) as { fingerprint: string; at: number }]))
  }
  return {
    cms,
    varnish,
    naming: (key) => varnish.requests.map((purge, i) => ({ ...purge, at: arrivals[i]! })).filter((purge) => purge.keys.includes(key)),
    env,
    records,
    async served() {
      return Object.fromEntries(Object.entries(await records()).map(([owner, record]) => [owner, record.fingerprint]))
    },
  }
}

/** `n` instances started one after the other (the first syncs), serving one snapshot, all recorded as serving it. */
async function startInstances(s: Setup, n: number): Promise<Harness[]> {
  const instances: Harness[] = []
  for (let i = 0; i < n; i++) {
    const instance = await startShield({ sharedOrigin: s.cms, env: s.env, synced: false, deps: { autoSync: true } })
    cleanups.push(() => instance.close())
    instances.push(instance)
  }
  await eventually(async () => {
    const fingerprint = instances[0]!.app.shield.sync.current?.fingerprint
    const served = Object.values(await s.served())
    return fingerprint !== undefined && served.length === n && served.every((f) => f === fingerprint)
  }, 'every instance serves the first snapshot and says so')
  // The first sync's purge of everything is behind us.
  await instances[0]!.app.shield.cdn.idle()
  return instances
}

function leafOf(h: Harness, cms: FakeWagtail): FakePage {
  const snapshot = h.app.shield.sync.current!
  const record = snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!
  return cms.pages().find((p) => p.id === record.id)!
}

async function titleOn(h: Harness, id: number): Promise<string> {
  return (JSON.parse((await h.get(`/api/v1/cms/pages/${id}/`)).body) as { title: string }).title
}

/**
 * Makes `h` slow to load snapshots: its reads of the shared snapshot, whole or as patches, wait
 * until `release()`.
 */
function holdSnapshotReads(h: Harness): { reads(): number; release(): void } {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const target = h.app.shield.shared!.snapshotTarget
  let reads = 0
  const held = <A extends unknown[], R>(read: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    reads++
    await released
    return read(...args)
  }
  target.read = held(target.read.bind(target))
  const patches = target.patches
  if (patches) patches.read = held(patches.read.bind(patches))
  cleanups.push(async () => release())
  return { reads: () => reads, release }
}

const purgeVia = (h: Harness, id: number) => h.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${id}/`, headers: { host: 'localhost' } })

describe('a CDN purge with several instances', () => {
  it('is held while a follower still serves the old tree, sent as soon as it serves the new one, and sent once', async () => {
    const s = await setup()
    const [leader, follower1, follower2] = (await startInstances(s, 3)) as [Harness, Harness, Harness]
    expect([leader, follower1, follower2].map((h) => h.app.shield.cluster!.role)).toEqual(['leader', 'follower', 'follower'])

    // Follower 2 is slow to load snapshots: its reads of the shared snapshot wait for the test.
    const held = holdSnapshotReads(follower2)

    const gate: string[] = []
    leader.app.shield.events.on('purgeGate', ({ result }) => void gate.push(result))
    const leaf = leafOf(leader, s.cms)
    const key = `cms-page-${leaf.id}`
    const title = 'Edited behind a CDN'
    s.cms.updatePage(leaf.id, { title })
    expect((await purgeVia(follower1, leaf.id)).statusCode).toBe(200)
    await eventually(async () => (await titleOn(leader, leaf.id)) === title && (await titleOn(follower1, leaf.id)) === title, 'the leader and follower 1 serve the edit')
    await eventually(() => held.reads() > 0, 'follower 2 starts loading the edit')
    const edit = leader.app.shield.sync.current!.fingerprint
    await eventually(async () => Object.values(await s.served()).filter((f) => f === edit).length === 2, 'two instances record the edit as served')

    // The leader reads the records every 50 ms: many times over, and still no purge.
    await pause(1000)
    expect(s.naming(key)).toEqual([])
    expect(await titleOn(follower2, leaf.id)).toBe(leaf.title)

    let caughtUpAt: number | undefined
    follower2.app.shield.events.on('snapshot', () => void (caughtUpAt ??= Date.now()))
    const releasedAt = Date.now()
    held.release()
    await eventually(() => s.naming(key).length > 0, 'the purge is sent')
    const [sent] = s.naming(key)
    expect(sent).toMatchObject({ method: 'PURGE', path: '/', soft: false })
    expect(await titleOn(follower2, leaf.id)).toBe(title)
    // After follower 2 swapped the edit in, and long before CDN_PURGE_WAIT ran out.
    expect(caughtUpAt).toBeDefined()
    expect(sent!.at).toBeGreaterThanOrEqual(caughtUpAt!)
    expect(sent!.at - releasedAt).toBeLessThan(PURGE_WAIT_MS / 3)

    // Once, by the syncing instance only.
    await Promise.all([leader, follower1, follower2].map((h) => h.app.shield.cdn.idle()))
    await pause(300)
    expect(s.naming(key)).toHaveLength(1)
    expect(gate).toEqual(['confirmed'])
    // Besides the first sync's purge of everything, nothing else was sent.
    expect(s.varnish.requests.filter((purge) => !purge.keys.includes('cms-pages'))).toHaveLength(1)
  })

  it('goes out anyway once CDN_PURGE_WAIT runs out while a follower still lags', async () => {
    const waitMs = 1000
    const s = await setup(undefined, { CDN_PURGE_WAIT: `${waitMs}ms` })
    const [leader, , slow] = (await startInstances(s, 3)) as [Harness, Harness, Harness]
    const held = holdSnapshotReads(slow)
    const gate: string[] = []
    leader.app.shield.events.on('purgeGate', ({ result }) => void gate.push(result))
    let swappedAt: number | undefined
    leader.app.shield.events.on('snapshot', () => void (swappedAt ??= Date.now()))

    const leaf = leafOf(leader, s.cms)
    const key = `cms-page-${leaf.id}`
    s.cms.updatePage(leaf.id, { title: 'Edited while a follower lags' })
    expect((await purgeVia(leader, leaf.id)).statusCode).toBe(200)
    await eventually(() => s.naming(key).length > 0, 'the purge is sent')
    const [sent] = s.naming(key)
    expect(sent!.at - swappedAt!).toBeGreaterThanOrEqual(waitMs)
    expect(gate).toEqual(['timeout'])
    expect(held.reads()).toBeGreaterThan(0)
    expect(await titleOn(slow, leaf.id)).toBe(leaf.title)
  })

  it('is not held by a follower that died for longer than its record takes to age out', async () => {
    const s = await setup()
    const [leader, follower] = (await startInstances(s, 2)) as [Harness, Harness]
    // A third instance in a process of its own, killed outright: its record stays in Redis, unrefreshed.
    const port = await freePort()
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { PATH: process.env.PATH ?? '', ...s.env, UPSTREAM_URL: s.cms.url, BASE_URL: 'https://shield.example', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    })
    cleanups.push(async () => void child.kill('SIGKILL'))
    const fingerprint = leader.app.shield.sync.current!.fingerprint
    await eventually(async () => {
      const served = Object.values(await s.served())
      return served.length === 3 && served.every((f) => f === fingerprint)
    }, 'the third instance serves the snapshot and says so', 20_000)
    const before = new Set(Object.keys(await s.served()))
    child.kill('SIGKILL')
    const killedAt = Date.now()
    // Its last word: the lease owner id names the process.
    const dead = Object.entries(await s.records()).find(([owner]) => owner.includes(`:${child.pid}:`))?.[1]
    expect(dead).toBeDefined()

    const leaf = leafOf(leader, s.cms)
    const key = `cms-page-${leaf.id}`
    s.cms.updatePage(leaf.id, { title: 'Edited after a follower died' })
    expect((await purgeVia(leader, leaf.id)).statusCode).toBe(200)
    await eventually(() => s.naming(key).length > 0, 'the purge is sent')
    const [sent] = s.naming(key)
    // A record ages out a lease period (900 ms here) after its last heartbeat: the purge waited
    // for that (the dead instance might have been alive and slow until then), but not for
    // CDN_PURGE_WAIT.
    expect(sent!.at).toBeGreaterThanOrEqual(dead!.at + LEASE_MS)
    expect(sent!.at - killedAt).toBeLessThan(LEASE_MS + 2000)
    expect(await titleOn(follower, leaf.id)).toBe('Edited after a follower died')
    // The dead instance's record is gone; the live ones remain.
    const after = Object.keys(await s.served())
    expect(after).toHaveLength(2)
    expect(after.every((owner) => before.has(owner))).toBe(true)
  })

  describe('while Redis is down', () => {
    const redis = ownRedisServer()

    it('each instance syncs by itself and purges its own change at once, waiting for nobody', async () => {
      const s = await setup(redis().url)
      const instances = await startInstances(s, 2)
      await redis().kill()
      await eventually(() => instances.every((h) => h.app.shield.cluster!.role === 'standalone'), 'both instances turn standalone')

      const gate: string[] = []
      for (const h of instances) h.app.shield.events.on('purgeGate', ({ result }) => void gate.push(result))
      const leaf = leafOf(instances[0]!, s.cms)
      const key = `cms-page-${leaf.id}`
      const title = 'Edited while Redis is down'
      s.cms.updatePage(leaf.id, { title })
      const editedAt = Date.now()
      // Behind a load balancer the editor's PURGE reaches one instance; the other syncs on its
      // schedule (here: a PURGE of its own).
      for (const h of instances) expect((await purgeVia(h, leaf.id)).statusCode).toBe(200)
      await eventually(() => s.naming(key).length === 2, 'both instances purge the edit')
      for (const h of instances) expect(await titleOn(h, leaf.id)).toBe(title)
      // Not held for CDN_PURGE_WAIT: there is nobody to ask.
      for (const sent of s.naming(key)) expect(sent.at - editedAt).toBeLessThan(PURGE_WAIT_MS / 3)
      expect(gate).toEqual(['standalone', 'standalone'])
    })
  })
})
