/**
 * Redis faults under a stream of readers (down at start, killed under
 * load, restarted, slow; 0 failed client requests). Redis is a shared tier, not a requirement
 * (docs/architecture.md#decisions): whatever it does, every reader gets a 200 with the bytes and ETag the CMS's answer
 * makes (cms-shield answers exactly as Wagtail would, detail_urls on BASE_URL), within a
 * bound, and the instances find their way back to one leader and a shared snapshot once Redis is
 * back. Each test runs its own redis-server on a free port, so killing or pausing it touches
 * nobody else; readers are real HTTP clients (the fast path included), bounded in time and count.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { computeEtag } from '../../src/http/validators.js'
import { generateSite, startFakeWagtail, type FakePage, type FakeWagtail } from '../fake-wagtail/index.js'
import { startRedis, type RedisServer } from '../helpers/redis-server.js'
import { asServedByShield, startShield, type Harness } from '../helpers/start-shield.js'

const LEASE_MS = 900
const COMMAND_TIMEOUT_MS = 100
/** Generous for a loaded 2-core machine, yet far below anything that waits for Redis to come back. */
const SLOWEST_READ_MS = 1500
const PREFIX = 'cms-shield:'
const SEARCH = '/api/v1/cms/pages/?search=versicherung'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined)
})

/** Polls (bounded) until `check` holds. */
async function eventually(what: string, check: () => boolean | Promise<boolean>, ms = 5000): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`)
    await sleep(20)
  }
  return Date.now() - started
}

async function privateRedis(): Promise<RedisServer> {
  const redis = await startRedis()
  cleanups.push(() => redis.stop())
  return redis
}

/** An inspector of the test's own Redis: reconnects by itself across a restart. */
function admin(redis: RedisServer): Redis {
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 3 })
  client.on('error', () => undefined)
  cleanups.push(async () => client.disconnect())
  return client
}

async function origin(): Promise<FakeWagtail> {
  const cms = await startFakeWagtail({ pages: generateSite() })
  cleanups.push(() => cms.close())
  return cms
}

interface Instance {
  readonly h: Harness
  /** `http://127.0.0.1:<port>` */
  readonly base: string
  /** Everything it logged (JSON lines). */
  logs(): Array<Record<string, unknown>>
}

/** One cms-shield in front of `cms`, syncing by itself (the lease decides who syncs), listening on loopback. */
async function instance(cms: FakeWagtail, redis: RedisServer, extra: Record<string, string> = {}): Promise<Instance> {
  let text = ''
  const env = {
    REDIS_URL: redis.url,
    REDIS_COMMAND_TIMEOUT: `${COMMAND_TIMEOUT_MS}ms`,
    LEADER_LEASE: `${LEASE_MS}ms`,
    REFRESH_DEBOUNCE: '20ms',
    LOG_LEVEL: 'info',
    ...extra,
  }
  const h = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true, logger: undefined, logStream: { write: (line) => void (text += line) } } })
  cleanups.push(() => h.close())
  await h.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = h.app.server.address() as { port: number }
  const logs = () => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)
  return { h, base: `http://127.0.0.1:${port}`, logs }
}

const role = (i: Instance) => i.h.app.shield.cluster!.role
/** The instance's lease owner id, as its lease logs name it. */
const ownerOf = (i: Instance) => i.logs().find((line) => typeof line['owner'] === 'string')?.['owner'] as string | undefined
const messages = (i: Instance) => i.logs().map((line) => String(line['msg']))

/** What the CMS answers for `url`, as cms-shield must serve it. Asked before the test counts CMS hits. */
async function expectedBodies(cms: FakeWagtail, urls: readonly string[]): Promise<Map<string, string>> {
  const bodies = new Map<string, string>()
  for (const url of urls) bodies.set(url, asServedByShield(await (await fetch(cms.url + url)).text()))
  return bodies
}

/** Live pages of the CMS that readers may ask for (`skip` is kept for an edit that readers must not see). */
function readerUrls(cms: FakeWagtail, skip: readonly number[] = []): string[] {
  const pages = cms.pages().filter((p) => p.live !== false && p.parentId !== null && !skip.includes(p.id))
  return ['/api/v1/cms/pages/', '/api/v1/cms/pages/?limit=30&offset=10', `/api/v1/cms/pages/${pages[3]!.id}/`, `/api/v1/cms/pages/${pages[40]!.id}/`, SEARCH]
}

/** Read-through keys nobody has asked for yet (`limit` first…first+n-1): each costs a CMS request the first time. */
const coldUrls = (first: number, n = 8) => Array.from({ length: n }, (_, i) => `${SEARCH}&limit=${first + i}`)

interface Reading {
  /** Adds urls to the rotation (their expected bodies must be in the map). */
  add(urls: readonly string[]): void
  /** Answers received so far, per url. */
  answered(url: string): number
  served(): number
  /** Stops the readers and reports every answer that was not a 200 with the expected bytes and ETag. */
  stop(): Promise<{ served: number; failures: string[]; slowestMs: number }>
  /** The slowest answer among those that started at or after `since` (performance.now()). */
  slowestSince(since: number): number
}

const READ_LIMIT_MS = 40_000
const READS_PER_READER = 20_000

/** `concurrency` readers per instance, each asking the next url in turn until stopped (or a bound). */
function read(instances: readonly Instance[], initial: readonly string[], expected: Map<string, string>, concurrency = 3): Reading {
  const agent = new Agent({ keepAliveTimeout: 2000, connections: 16 })
  cleanups.push(() => agent.close())
  const urls = [...initial]
  const counts = new Map<string, number>()
  const failures: string[] = []
  const timings: Array<{ at: number; ms: number }> = []
  let served = 0
  let running = true
  const deadline = performance.now() + READ_LIMIT_MS
  const reader = async (target: Instance, offset: number) => {
    for (let n = 0; running && n < READS_PER_READER && performance.now() < deadline; n++) {
      const url = urls[(n + offset) % urls.length]!
      const body = expected.get(url)!
      const at = performance.now()
      try {
        const response = await request(target.base + url, { dispatcher: agent, headersTimeout: 10_000, bodyTimeout: 10_000 })
        const text = await response.body.text()
        const ms = performance.now() - at
        timings.push({ at, ms })
        if (response.statusCode !== 200) failures.push(`${target.base}${url}: ${response.statusCode} ${text.slice(0, 200)}`)
        else if (text !== body) failures.push(`${target.base}${url}: other bytes than the CMS's: ${text.slice(0, 200)}`)
        else if (response.headers['etag'] !== computeEtag(Buffer.from(body))) failures.push(`${target.base}${url}: ETag ${String(response.headers['etag'])}`)
        else {
          served++
          counts.set(url, (counts.get(url) ?? 0) + 1)
        }
      } catch (error) {
        failures.push(`${target.base}${url}: ${String(error)}`)
      }
      await sleep(2)
    }
  }
  const readers = instances.flatMap((target) => Array.from({ length: concurrency }, (_, i) => reader(target, i * 2)))
  return {
    add: (more) => void urls.push(...more),
    answered: (url) => counts.get(url) ?? 0,
    served: () => served,
    async stop() {
      running = false
      await Promise.all(readers)
      return { served, failures, slowestMs: Math.max(0, ...timings.map((t) => t.ms)) }
    },
    slowestSince: (since) => Math.max(0, ...timings.filter((t) => t.at >= since).map((t) => t.ms)),
  }
}

/** Reads on until every url in `urls` has been answered at least once more than now. */
async function untilAnswered(reading: Reading, urls: readonly string[], what: string): Promise<void> {
  const before = new Map(urls.map((url) => [url, reading.answered(url)]))
  await eventually(what, () => urls.every((url) => reading.answered(url) > before.get(url)!), 10_000)
}

async function readyz(i: Instance): Promise<{ ready: boolean; redis: string; redisErrors: number; sync: { role: string } }> {
  const response = await request(`${i.base}/readyz`)
  return (await response.body.json()) as never
}

async function metric(i: Instance, pattern: RegExp): Promise<number> {
  const text = await (await request(`${i.base}/metrics`)).body.text()
  return text.split('\n').filter((line) => pattern.test(line)).reduce((sum, line) => sum + Number(line.split(' ').pop()), 0)
}

/** Requests of the CMS for one of `urls`. */
const cmsAsked = (cms: FakeWagtail, urls: readonly string[]) => cms.requests.filter((r) => urls.includes(r.url)).length

function leafOf(cms: FakeWagtail, avoid: readonly string[]): FakePage {
  const pages = cms.pages()
  const parents = new Set(pages.map((p) => p.parentId))
  return pages.find((p) => p.parentId !== null && !parents.has(p.id) && p.type === 'cms.GenericPage' && !avoid.some((url) => url.includes(`/${p.id}/`)))!
}

/** A leader and a follower sharing `redis`, both serving; the first one started leads. */
async function pair(cms: FakeWagtail, redis: RedisServer): Promise<[Instance, Instance]> {
  const a = await instance(cms, redis)
  await eventually('the first instance leads and has synced', () => role(a) === 'leader' && a.h.app.shield.sync.current !== undefined, 10_000)
  const client = admin(redis)
  await eventually('its snapshot is stored', async () => (await client.exists(`${PREFIX}snapshot:latest`)) === 1, 5000)
  const b = await instance(cms, redis)
  await eventually('the second follows with the leader\'s snapshot', () => role(b) === 'follower' && b.h.app.shield.sync.current !== undefined, 10_000)
  return [a, b]
}

describe('Redis down at start', () => {
  it('serves from its own sync (standalone), then leads once Redis is up, with the shared cache and pub/sub working', async () => {
    const redis = await privateRedis()
    await redis.stop()
    const cms = await origin()
    const urls = readerUrls(cms)
    const cold = coldUrls(1)
    const expected = await expectedBodies(cms, [...urls, ...cold])
    cms.resetHits()

    const a = await instance(cms, redis)
    await eventually('first sync', () => a.h.app.shield.sync.current !== undefined, 10_000)
    const reading = read([a], urls, expected)
    // Redis cannot say who leads: this instance syncs the CMS itself (89 pages, every detail).
    expect(role(a)).toBe('standalone')
    expect(cms.hits.detail).toBe(89)
    expect(await readyz(a)).toMatchObject({ ready: true, redis: 'down', sync: { role: 'standalone' } })
    reading.add(cold)
    await untilAnswered(reading, cold, 'cold read-through keys answered with Redis down')

    const upAt = performance.now()
    await redis.restart()
    await eventually('leader once Redis is up', () => role(a) === 'leader', 5000)
    const client = admin(redis)
    expect(await client.get(`${PREFIX}leader`)).not.toBeNull()
    expect(await readyz(a)).toMatchObject({ ready: true, redis: 'up', sync: { role: 'leader' } })
    // The shared tier works: a new read-through answer is written to Redis…
    const fresh = coldUrls(9, 1)
    expected.set(fresh[0]!, asServedByShield(await (await fetch(cms.url + fresh[0]!)).text()))
    reading.add(fresh)
    await untilAnswered(reading, fresh, 'a read-through key asked after Redis came up')
    await eventually('the read-through entry in Redis', async () => (await client.keys(`${PREFIX}rt:*`)).length > 0)
    // …and the single flight and the cluster channel subscribed although Redis was down when they were built.
    await eventually('pub/sub subscribed', async () => {
      const numsub = (await client.pubsub('NUMSUB', `${PREFIX}filled`, `${PREFIX}snapshots`, `${PREFIX}refresh`)) as Array<string | number>
      return numsub.filter((_, i) => i % 2 === 1).every((n) => Number(n) === 1)
    })

    const result = await reading.stop()
    expect(result.failures).toEqual([])
    expect(result.served).toBeGreaterThan(50)
    expect(reading.slowestSince(upAt)).toBeLessThan(SLOWEST_READ_MS)
    // The CMS saw one request per cold key: nothing was asked twice because Redis was down.
    expect(cmsAsked(cms, cold)).toBe(cold.length)
    // Logged as one transition each, not once per failed command or reconnect.
    expect(messages(a).filter((m) => m === 'redis: cannot connect; retrying in the background')).toHaveLength(1)
    expect(messages(a)).toContain('redis: connected')
  }, 40_000)

  // Needs src/app.ts to pass `storeShared` to the coordinator (see the report of this change):
  // until then the leader never stores the snapshot it synced while Redis was down, and a
  // follower started afterwards has nothing to serve. Flip to `it` once wired.
  it('lets a follower started after Redis came up serve the leader\'s snapshot, without asking the CMS', async () => {
    const redis = await privateRedis()
    await redis.stop()
    const cms = await origin()
    const urls = readerUrls(cms)
    const expected = await expectedBodies(cms, urls)
    const a = await instance(cms, redis)
    await eventually('first sync', () => a.h.app.shield.sync.current !== undefined, 10_000)
    await redis.restart()
    await eventually('leader once Redis is up', () => role(a) === 'leader', 5000)
    const client = admin(redis)
    await eventually('the leader stores its snapshot', async () => (await client.exists(`${PREFIX}snapshot`, `${PREFIX}snapshot:latest`)) === 2, 3000)
    // The read-through key too, so that the follower has no reason at all to ask the CMS.
    const warm = await request(a.base + SEARCH)
    expect(await warm.body.text()).toBe(expected.get(SEARCH))

    cms.resetHits()
    const b = await instance(cms, redis)
    await eventually('the follower serves', () => b.h.app.shield.sync.current !== undefined, 3000)
    expect(role(b)).toBe('follower')
    const reading = read([a, b], urls, expected)
    await untilAnswered(reading, urls, 'every url from both')
    const result = await reading.stop()
    expect(result.failures).toEqual([])
    expect(cms.hits.total).toBe(0)
    expect(b.h.app.shield.sync.current!.fingerprint).toBe(a.h.app.shield.sync.current!.fingerprint)
  }, 40_000)
})

/** One leader with a snapshot in its own Redis, readers warmed up over its URLs, one cold key to come. */
async function leaderUnderLoad() {
  const redis = await privateRedis()
  const cms = await origin()
  const urls = readerUrls(cms)
  const cold = coldUrls(1)
  const expected = await expectedBodies(cms, [...urls, ...cold])
  const a = await instance(cms, redis)
  await eventually('leader with a snapshot', () => role(a) === 'leader' && a.h.app.shield.sync.current !== undefined, 10_000)
  const reading = read([a], urls, expected, 4)
  await untilAnswered(reading, urls, 'warm-up')
  return { redis, cms, urls, cold, expected, a, reading }
}

describe('Redis killed under load', () => {
  it('fails no request, answers within a bound from memory and the CMS, and reports the failure in metrics and logs', async () => {
    const { redis, cms, urls, cold, a, reading } = await leaderUnderLoad()
    cms.resetHits()

    const killedAt = performance.now()
    await redis.kill()
    reading.add(cold)
    // Redis stays down until every cold key was answered: a request that waited for the reconnect
    // would never be answered here.
    await untilAnswered(reading, [...urls, ...cold], 'every url answered with Redis dead')
    expect(await readyz(a)).toMatchObject({ ready: true, redis: 'down', sync: { role: 'leader' } })
    expect(await metric(a, /^cms_shield_redis_up /)).toBe(0)
    expect(await metric(a, /^cms_shield_cache_errors_total\{tier="redis"/)).toBeGreaterThan(0)
    const result = await reading.stop()

    expect(result.failures).toEqual([])
    expect(reading.slowestSince(killedAt)).toBeLessThan(SLOWEST_READ_MS)
    // Warm keys came from memory, cold ones cost one CMS request each: Redis' absence added none.
    expect(cmsAsked(cms, [SEARCH])).toBe(0)
    expect(cmsAsked(cms, cold)).toBe(cold.length)
    // Logged once each, as transitions, not once per failed command or reconnect attempt.
    const lost = 'redis: connection lost; reconnecting in the background'
    await eventually('the lost connection logged', () => messages(a).includes(lost))
    expect(messages(a).filter((m) => m === lost)).toHaveLength(1)
    expect(messages(a).filter((m) => m === 'redis cache tier failing; answering from memory until it recovers')).toHaveLength(1)
  }, 40_000)
})

describe('Redis restarted empty', () => {
  it('gets back one leader, the shared cache and pub/sub, while both instances keep serving', async () => {
    const redis = await privateRedis()
    const cms = await origin()
    const urls = readerUrls(cms)
    const edited = leafOf(cms, urls)
    const expected = await expectedBodies(cms, urls)
    const [a, b] = await pair(cms, redis)
    const reading = read([a, b], urls, expected)
    await untilAnswered(reading, urls, 'warm-up')

    const restartedAt = performance.now()
    await redis.restart()
    const client = admin(redis)
    // Redis came back without the lease: until the old leader's renewal (sent when the connection
    // is ready) finds the key another's, both may lead for a moment. Wait for the lease's holder to
    // be the one leader, which is stable from then on.
    await eventually('one leader again, holding the lease in Redis, and one follower', async () => {
      const holder = await client.get(`${PREFIX}leader`)
      const leaders = [a, b].filter((i) => role(i) === 'leader')
      return leaders.length === 1 && [a, b].some((i) => role(i) === 'follower') && holder === ownerOf(leaders[0]!)
    }, 5000)
    const [leader, follower] = role(a) === 'leader' ? [a, b] : [b, a]
    await eventually('both connected', () => a.h.app.shield.shared!.isUp() && b.h.app.shield.shared!.isUp())
    // Both subscribers came back on every channel (ioredis re-subscribes after the reconnect).
    await eventually('pub/sub re-subscribed', async () => {
      const numsub = (await client.pubsub('NUMSUB', `${PREFIX}filled`, `${PREFIX}snapshots`, `${PREFIX}refresh`)) as Array<string | number>
      return numsub.filter((_, i) => i % 2 === 1).every((n) => Number(n) === 2)
    })

    // An instance that takes the lease syncs at once: the new leader's first sync (a takeover, if
    // the former follower won the key) may still be asking the CMS. Let it end before counting.
    await leader.h.app.shield.sync.syncNow()

    // The shared cache works again: what one instance asked the CMS, the other serves from Redis.
    const fresh = coldUrls(9, 1)[0]!
    expected.set(fresh, asServedByShield(await (await fetch(cms.url + fresh)).text()))
    const first = await request(leader.base + fresh)
    expect(await first.body.text()).toBe(expected.get(fresh))
    cms.resetHits()
    const second = await request(follower.base + fresh)
    expect(await second.body.text()).toBe(expected.get(fresh))
    expect(second.headers['etag']).toBe(first.headers['etag'])
    expect(cmsAsked(cms, [fresh])).toBe(0)

    // A PURGE received by the follower crosses pub/sub to the leader, which syncs, stores and
    // announces; the follower loads it. (A body-only edit: none of the readers' answers changes.)
    cms.updatePage(edited.id, { extra: { ...edited.extra, body: '<p>edited after the restart</p>' } })
    const purge = await follower.h.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${edited.id}/`, headers: { host: 'localhost' } })
    expect(purge.statusCode).toBe(200)
    await eventually('the edit served by both', async () => {
      const bodies = await Promise.all([leader, follower].map(async (i) => (await (await request(`${i.base}/api/v1/cms/pages/${edited.id}/`)).body.text())))
      return bodies.every((body) => body.includes('edited after the restart'))
    })
    expect(cms.requests.filter((r) => r.kind === 'detail').map((r) => r.url)).toEqual([`/api/v1/cms/pages/${edited.id}/`])

    const result = await reading.stop()
    expect(result.failures).toEqual([])
    expect(reading.slowestSince(restartedAt)).toBeLessThan(SLOWEST_READ_MS)
    expect([role(a), role(b)].sort()).toEqual(['follower', 'leader'])
  }, 40_000)

  it('has the leader store its snapshot again, so an instance started after the restart serves at once', async () => {
    const redis = await privateRedis()
    const cms = await origin()
    const [a] = await pair(cms, redis)
    await redis.restart()
    const client = admin(redis)
    await eventually('the snapshot stored again', async () => (await client.exists(`${PREFIX}snapshot`, `${PREFIX}snapshot:latest`)) === 2, 3000)
    cms.resetHits()
    const late = await instance(cms, redis)
    await eventually('the late instance serves', () => late.h.app.shield.sync.current !== undefined, 3000)
    expect(late.h.app.shield.sync.current!.fingerprint).toBe(a.h.app.shield.sync.current!.fingerprint)
    expect(cms.hits.detail).toBe(0)
  }, 40_000)
})

describe('Redis slow', () => {
  it('answers from memory and the CMS within a bound while Redis hangs, and the leader syncs standalone once its lease runs out', async () => {
    const { redis, cms, urls, cold, a, reading } = await leaderUnderLoad()
    const timeoutsBefore = await metric(a, /^cms_shield_cache_errors_total\{tier="redis".*timed_out="true"/)
    cms.resetHits()

    // SIGSTOP: connections stay open and every command waits — longer than REDIS_COMMAND_TIMEOUT.
    const pausedAt = performance.now()
    redis.pause()
    cleanups.push(async () => redis.resume())
    reading.add(cold)
    await untilAnswered(reading, [...urls, ...cold], 'every url answered while Redis hangs')
    // Redis cannot renew the lease: the leader leads while it runs, then syncs on its own.
    await eventually('standalone', () => role(a) === 'standalone', LEASE_MS * 3)
    expect(reading.slowestSince(pausedAt)).toBeLessThan(SLOWEST_READ_MS)
    expect(await metric(a, /^cms_shield_cache_errors_total\{tier="redis".*timed_out="true"/)).toBeGreaterThan(timeoutsBefore)
    expect(cmsAsked(cms, cold)).toBe(cold.length)
    expect(cmsAsked(cms, [SEARCH])).toBe(0)

    redis.resume()
    await eventually('leader again', () => role(a) === 'leader', 5000)
    const result = await reading.stop()
    expect(result.failures).toEqual([])
    expect(result.slowestMs).toBeLessThan(SLOWEST_READ_MS)
  }, 40_000)
})

describe('two instances sharing Redis, Redis killed', () => {
  it('both keep serving and syncing on their own, and exactly one leads again once Redis is back', async () => {
    const redis = await privateRedis()
    const cms = await origin()
    const urls = readerUrls(cms)
    const expected = await expectedBodies(cms, urls)
    const [a, b] = await pair(cms, redis)
    const reading = read([a, b], urls, expected)
    await untilAnswered(reading, urls, 'warm-up')

    await redis.kill()
    // Split-brain-safe: with nobody able to say who leads, each syncs for itself; none follows a
    // leader it cannot hear from.
    await eventually('both standalone', () => role(a) === 'standalone' && role(b) === 'standalone', LEASE_MS * 3)
    // Each one's PURGE reaches its own sync: an edit shows on the instance that was told.
    const edited = leafOf(cms, urls)
    cms.updatePage(edited.id, { extra: { ...edited.extra, body: '<p>edited while Redis is down</p>' } })
    cms.resetHits()
    for (const i of [a, b]) {
      expect((await i.h.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${edited.id}/`, headers: { host: 'localhost' } })).statusCode).toBe(200)
      await eventually('the edit served', async () => (await (await request(`${i.base}/api/v1/cms/pages/${edited.id}/`)).body.text()).includes('edited while Redis is down'))
    }
    // Two syncs, one per instance: the listing pass and the purged page each.
    expect(cms.requests.filter((r) => r.kind === 'detail').map((r) => r.url)).toEqual([`/api/v1/cms/pages/${edited.id}/`, `/api/v1/cms/pages/${edited.id}/`])
    await untilAnswered(reading, urls, 'every url answered with Redis dead')

    await redis.restart()
    await eventually('one leader', () => [role(a), role(b)].sort().join() === 'follower,leader', 5000)
    const leader = role(a) === 'leader' ? a : b
    // …and it stays that way over several lease ticks.
    for (let tick = 0; tick < 4; tick++) {
      await sleep(LEASE_MS / 3)
      expect(role(leader)).toBe('leader')
      expect([role(a), role(b)].sort()).toEqual(['follower', 'leader'])
    }
    await untilAnswered(reading, urls, 'every url answered after the restart')
    const result = await reading.stop()
    expect(result.failures).toEqual([])
    expect(result.slowestMs).toBeLessThan(SLOWEST_READ_MS)
    expect(result.served).toBeGreaterThan(100)
  }, 40_000)
})
