/**
 * Edits cost what they change across the cluster: the syncing instance stores each change in Redis
 * as a patch against the snapshot before it, followers on that snapshot apply it without reading
 * the whole one, a follower on another snapshot loads the whole one and the patches after it, and
 * an instance started later is warm from the full snapshot plus the chain, with the CMS down.
 */
import { randomUUID } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { carryOver, patchSnapshot } from '../../src/tree/build-snapshot.js'
import { generateSite, startFakeWagtail, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { eventually } from '../helpers/eventually.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})


async function origin(): Promise<FakeWagtail> {
  const cms = await startFakeWagtail({ pages: generateSite() })
  cleanups.push(() => cms.close())
  return cms
}

async function clusterEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-patches-${randomUUID()}:`, LEADER_LEASE: '900ms', REFRESH_DEBOUNCE: '20ms', ...extra }
}

async function start(cms: FakeWagtail, env: Record<string, string>, autoSync = true): Promise<Harness> {
  const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync } })
  cleanups.push(() => instance.close())
  return instance
}

/** Counts the follower's reads of the whole stored snapshot and of the patch log. */
function countReads(h: Harness) {
  const target = h.app.shield.shared!.snapshotTarget
  return { full: vi.spyOn(target, 'read'), patches: vi.spyOn(target.patches!, 'read') }
}

const titleOn = async (h: Harness, id: number) => (JSON.parse((await h.get(`/api/v1/cms/pages/${id}/`)).body) as { title?: string }).title

/** An edit on the CMS and its PURGE through `via`, done once `via`'s leader serves it. */
async function edit(cms: FakeWagtail, via: Harness, leader: Harness, id: number, title: string): Promise<void> {
  cms.updatePage(id, { title })
  const purge = await via.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${id}/`, remoteAddress: '127.0.0.1' })
  expect(purge.statusCode).toBeLessThan(300)
  await eventually(async () => (await titleOn(leader, id)) === title, `the leader serves "${title}"`)
}

async function redisOf(env: Record<string, string>) {
  const redis = new Redis(env.REDIS_URL!, { lazyConnect: true })
  await redis.connect()
  cleanups.push(async () => void redis.disconnect())
  return redis
}

/** A leader and one follower serving its snapshot, and two pages to edit. */
async function leaderAndFollower() {
  const cms = await origin()
  const env = await clusterEnv()
  const leader = await start(cms, env)
  const follower = await start(cms, env)
  await eventually(() => follower.app.shield.sync.current !== undefined && follower.app.shield.cluster!.role === 'follower', 'the follower serves')
  const [first, second] = cms.pages().filter((p) => p.parentId !== null) as [FakePage, FakePage]
  return { cms, env, leader, follower, first, second }
}

describe('changes stored and shared as patches', () => {
  it('followers apply the leader\'s patch for each edit without reading the whole snapshot', async () => {
    const cms = await origin()
    const env = await clusterEnv()
    const leader = await start(cms, env)
    const followers = [await start(cms, env), await start(cms, env)]
    await eventually(() => followers.every((f) => f.app.shield.sync.current !== undefined && f.app.shield.cluster!.role === 'follower'), 'the followers serve')
    const reads = followers.map(countReads)
    const pages = cms.pages().filter((p) => p.parentId !== null).slice(0, 8)
    for (const [n, page] of pages.entries()) {
      await edit(cms, followers[n % 2]!, leader, page.id, `Patched ${n}`)
      await eventually(async () => (await titleOn(followers[0]!, page.id)) === `Patched ${n}`, 'the follower serves the edit')
    }
    await eventually(() => followers.every((f) => f.app.shield.sync.current!.fingerprint === leader.app.shield.sync.current!.fingerprint), 'both followers serve the leader\'s snapshot')
    for (const read of reads) {
      expect(read.full).not.toHaveBeenCalled()
      expect(read.patches.mock.calls.length).toBeGreaterThanOrEqual(1)
    }
    const redis = await redisOf(env)
    expect(await redis.llen(`${env.REDIS_PREFIX!}snapshot:patches`)).toBe(pages.length)
    // Every patch is small: what one page changed, not the tree.
    for (const patch of await redis.lrangeBuffer(`${env.REDIS_PREFIX!}snapshot:patches`, 0, -1)) expect(patch.length).toBeLessThan(8 * 1024)
  })

  it('a follower that missed an announcement catches up through the patch log, without reading the whole snapshot', async () => {
    const { cms, leader, follower, first, second } = await leaderAndFollower()
    const sync = follower.app.shield.sync
    const before = sync.current!
    // The first change never reaches the follower's tree, as if its announcement had been lost.
    const take = sync.receive.bind(sync)
    const receive = vi.spyOn(sync, 'receive').mockImplementation((snapshot) => snapshot.version !== before.version + 1 && take(snapshot))
    await edit(cms, leader, leader, first!.id, 'Missed edit')
    await eventually(() => receive.mock.calls.length >= 1, 'the follower to be offered the first change')
    expect(sync.current).toBe(before)
    const reads = countReads(follower)
    await edit(cms, leader, leader, second!.id, 'Next edit')
    await eventually(() => sync.current!.fingerprint === leader.app.shield.sync.current!.fingerprint, 'the follower serves the leader\'s snapshot')
    expect(await titleOn(follower, first!.id)).toBe('Missed edit')
    expect(await titleOn(follower, second!.id)).toBe('Next edit')
    expect(reads.full).not.toHaveBeenCalled()
    expect(reads.patches).toHaveBeenCalledWith(0)
  })

  it('a follower on another snapshot than the patch\'s base (one that missed a change) loads the whole snapshot and the patches after it', async () => {
    const { cms, leader, follower, first, second } = await leaderAndFollower()
    await edit(cms, leader, leader, first!.id, 'First edit')
    await eventually(async () => (await titleOn(follower, first!.id)) === 'First edit', 'the follower serves the first edit')
    // The follower drifts off the leader's chain: it serves a snapshot the leader never made.
    const served = follower.app.shield.sync.current!
    const stray = { ...carryOver(served.byId.get(second!.id)!), title: 'Stray', detail: '{"stray": true}', digest: undefined, from: undefined }
    expect(follower.app.shield.sync.receive(patchSnapshot(served, new Map([[stray.id, stray]]), { version: served.version + 1, syncedAt: served.syncedAt, dialect: served.dialect }))).toBe(true)
    const reads = countReads(follower)
    await edit(cms, leader, leader, second!.id, 'Second edit')
    await eventually(async () => (await titleOn(follower, second!.id)) === 'Second edit', 'the follower serves the second edit')
    expect(reads.full).toHaveBeenCalled()
    expect(follower.app.shield.sync.current!.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)
    expect(await titleOn(follower, first!.id)).toBe('First edit')
  })

  it('an instance started after several edits is warm from the full snapshot plus the patches, serving every edit with the CMS down', async () => {
    const cms = await origin()
    const env = await clusterEnv()
    const leader = await start(cms, env)
    await eventually(() => leader.app.shield.sync.current !== undefined, 'the leader serves')
    const edited = cms.pages().filter((p) => p.parentId !== null).slice(0, 6)
    for (const [n, page] of edited.entries()) await edit(cms, leader, leader, page.id, `Edit ${n}`)
    const redis = await redisOf(env)
    await eventually(async () => (await redis.llen(`${env.REDIS_PREFIX!}snapshot:patches`)) === edited.length, 'every edit is stored as a patch')
    const fingerprint = leader.app.shield.sync.current!.fingerprint
    await cms.close()
    const late = await start(cms, env, false)
    expect(late.app.shield.sync.current?.fingerprint).toBe(fingerprint)
    for (const [n, page] of edited.entries()) expect(await titleOn(late, page.id)).toBe(`Edit ${n}`)
    expect((await late.get('/readyz')).status).toBe(200)
  })

  it('stores the whole snapshot again after SNAPSHOT_PATCHES_PER_FULL patches, once the last is announced, and a follower still follows', async () => {
    const cms = await origin()
    const env = await clusterEnv({ SNAPSHOT_PATCHES_PER_FULL: '2' })
    const leader = await start(cms, env)
    const follower = await start(cms, env)
    await eventually(() => follower.app.shield.sync.current !== undefined && follower.app.shield.cluster!.role === 'follower', 'the follower serves')
    const redis = await redisOf(env)
    const page = cms.pages().find((p) => p.parentId !== null)!
    const patchesKey = `${env.REDIS_PREFIX!}snapshot:patches`
    for (const [n, expected] of [1, 0, 1, 0].entries()) {
      await edit(cms, leader, leader, page.id, `Round ${n}`)
      await eventually(async () => (await titleOn(follower, page.id)) === `Round ${n}`, 'the follower serves the edit')
      await eventually(async () => (await redis.llen(patchesKey)) === expected, `${expected} patches in the log after edit ${n}`)
    }
    expect(follower.app.shield.sync.current!.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)
  })

  it('instances with different BASE_URLs follow the same patches, each on its own BASE_URL, at the leader\'s fingerprint', async () => {
    const cms = await origin()
    const env = await clusterEnv()
    const leader = await start(cms, { ...env, BASE_URL: 'https://old.example.com' })
    const follower = await start(cms, { ...env, BASE_URL: 'https://new.example.com/content' })
    await eventually(() => follower.app.shield.sync.current !== undefined && follower.app.shield.cluster!.role === 'follower', 'the follower serves')
    const reads = countReads(follower)
    const page = cms.pages().find((p) => p.parentId !== null)!
    await edit(cms, follower, leader, page.id, 'Edited behind two names')
    await eventually(async () => (await titleOn(follower, page.id)) === 'Edited behind two names', 'the follower serves the edit')
    expect(reads.full).not.toHaveBeenCalled()
    expect(follower.app.shield.sync.current!.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)
    const body = (await follower.get(`/api/v1/cms/pages/${page.id}/`)).body
    expect((JSON.parse(body) as { meta: { detail_url: string } }).meta.detail_url).toBe(`https://new.example.com/content/api/v1/cms/pages/${page.id}/`)
    expect(body).not.toContain('old.example.com')
    // A later instance on the second name starts from the full snapshot plus the patch, on its name.
    const late = await start(cms, { ...env, BASE_URL: 'https://new.example.com/content' }, false)
    expect(late.app.shield.sync.current?.fingerprint).toBe(leader.app.shield.sync.current!.fingerprint)
    expect((await late.get(`/api/v1/cms/pages/${page.id}/`)).body).toBe(body)
  })
})

describe('changes stored as patches in SNAPSHOT_FILE', () => {
  it('appends each edit to the sidecar, and a restart with the CMS down serves the file plus every patch', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cms-shield-patch-file-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    const file = join(dir, 'snapshot.bin')
    const cms = await origin()
    const first = await startShield({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file, REFRESH_DEBOUNCE: '20ms' }, deps: { autoSync: true } })
    cleanups.push(() => first.close())
    const edited = cms.pages().filter((p) => p.parentId !== null).slice(0, 3)
    for (const [n, page] of edited.entries()) await edit(cms, first, first, page.id, `On disk ${n}`)
    const fingerprint = first.app.shield.sync.current!.fingerprint
    await eventually(async () => {
      const sidecar = await readFile(`${file}.patches`).catch(() => Buffer.alloc(0))
      return (await first.app.shield.persistence!.loadNewest())?.snapshot.fingerprint === fingerprint && sidecar.length > 0
    }, 'the file and its patches hold the last edit')
    await first.close()
    await cms.close()
    const restarted = await startShield({ sharedOrigin: cms, env: { SNAPSHOT_FILE: file }, synced: false })
    cleanups.push(() => restarted.close())
    expect(restarted.app.shield.sync.current?.fingerprint).toBe(fingerprint)
    for (const [n, page] of edited.entries()) expect(await titleOn(restarted, page.id)).toBe(`On disk ${n}`)
  })
})
