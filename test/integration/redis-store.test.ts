/**
 * The Redis tier against a real Redis: entries round-trip byte for byte, Redis' own clock expires
 * them, two prefixes never meet, and a Redis that is killed, hangs or comes back never reaches a
 * caller as anything but a quick miss / no-op.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createRedisClient, createRedisStore, isRedisUp, type RedisClient, type RedisStore } from '../../src/cache/stores/redis-store.js'
import type { StoreEventMap } from '../../src/cache/stores/cache-store.js'
import { sharedRedisUrl, startRedis, type RedisServer } from '../helpers/redis-server.js'

const COMMAND_TIMEOUT_MS = 200
/** Room for a loaded CI machine on top of the command timeout. */
const MARGIN_MS = 300

const clients: RedisClient[] = []
afterAll(() => {
  for (const client of clients) client.disconnect()
})

function connect(url: string): RedisClient {
  const client = createRedisClient({ url, commandTimeoutMs: COMMAND_TIMEOUT_MS, connectTimeoutMs: 1000 })
  clients.push(client)
  return client
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, withinMs: number): Promise<T> {
  const deadline = performance.now() + withinMs
  for (;;) {
    const result = await probe()
    if (result !== undefined && result !== false) return result
    if (performance.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

const ready = (client: RedisClient) => until('redis ready', async () => isRedisUp(client), 5000)

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now()
  const result = await work
  return { result, ms: performance.now() - started }
}

function errorsOf(store: RedisStore): StoreEventMap['error'][] {
  const seen: StoreEventMap['error'][] = []
  store.on('error', (event) => seen.push(event))
  return seen
}

describe('redis store on a shared Redis', () => {
  let client: RedisClient
  let admin: Redis
  let prefix: string
  beforeAll(async () => {
    const url = await sharedRedisUrl()
    client = connect(url)
    admin = new Redis(url)
    clients.push(admin)
    await ready(client)
  })
  // Each test writes under its own prefix, so the shared instance keeps nothing of ours.
  afterEach(async () => {
    let cursor = '0'
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await admin.del(...keys)
      cursor = next
    } while (cursor !== '0')
  })
  const store = (extra = '') => {
    prefix = `cms-shield-test:${randomUUID()}:`
    return createRedisStore({ redis: client, prefix: prefix + extra, commandTimeoutMs: COMMAND_TIMEOUT_MS, now: Date.now })
  }

  it('round-trips binary values, storedAt and meta, under the prefix', async () => {
    const s = store()
    const value = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256))
    const meta = { status: 200, contentType: 'application/json', cacheable: true, etag: 'W/"ü\u0000"' }
    await s.set('GET /api/v1/cms/pages/?search=ä', { value, storedAt: 1_700_000_000_123, meta }, 60_000)
    const got = await s.get('GET /api/v1/cms/pages/?search=ä')
    expect(got?.value.equals(value)).toBe(true) // Buffer.equals: toEqual walks 70k bytes one by one
    expect({ ...got, value: undefined }).toEqual({ value: undefined, storedAt: 1_700_000_000_123, meta })
    await s.set('empty', { value: Buffer.alloc(0), storedAt: 0 }, 60_000)
    expect(await s.get('empty')).toEqual({ value: Buffer.alloc(0), storedAt: 0 })
    expect(await client.pttl(`${prefix}empty`)).toBeGreaterThan(59_000)
    expect(await client.exists(`${prefix}empty`)).toBe(1)
    await s.delete('empty')
    expect(await s.get('empty')).toBeUndefined()
    expect(s.errors).toBe(0)
  })

  it('lets Redis expire an entry after ttlMs', async () => {
    const s = store()
    await s.set('short', { value: Buffer.from('v'), storedAt: 0 }, 200)
    expect(await s.get('short')).toBeDefined()
    const started = performance.now()
    await until('entry expired', async () => (await s.get('short')) === undefined, 3000)
    expect(performance.now() - started).toBeGreaterThan(100)
  })

  it('keeps two prefixes apart', async () => {
    const a = store('a:')
    const b = createRedisStore({ redis: client, prefix: prefix + 'b:', commandTimeoutMs: COMMAND_TIMEOUT_MS, now: Date.now })
    await a.set('k', { value: Buffer.from('from a'), storedAt: 1 }, 60_000)
    expect(await b.get('k')).toBeUndefined()
    await b.set('k', { value: Buffer.from('from b'), storedAt: 2 }, 60_000)
    expect((await a.get('k'))?.value.toString()).toBe('from a')
    await b.delete('k')
    expect((await a.get('k'))?.value.toString()).toBe('from a')
  })

  it('treats a foreign value under the prefix as a miss', async () => {
    const s = store()
    await client.set(`${prefix}k`, 'not an entry')
    const errors = errorsOf(s)
    expect(await s.get('k')).toBeUndefined()
    expect(errors).toHaveLength(1)
  })
})

describe('redis store when Redis fails', () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('answers misses and no-ops quickly while Redis is dead, then works again once it is back', async () => {
    const client = connect(server.url)
    await ready(client)
    const store = createRedisStore({ redis: client, prefix: 'p:', commandTimeoutMs: COMMAND_TIMEOUT_MS, now: Date.now })
    const errors = errorsOf(store)
    await store.set('k', { value: Buffer.from('v'), storedAt: 0 }, 60_000)
    expect(await store.get('k')).toBeDefined()

    await server.kill()
    for (let i = 0; i < 5; i++) {
      const get = await timed(store.get('k'))
      const set = await timed(store.set('k', { value: Buffer.from('v2'), storedAt: 0 }, 60_000))
      const del = await timed(store.delete('k'))
      expect(get.result).toBeUndefined()
      for (const { ms } of [get, set, del]) expect(ms).toBeLessThan(COMMAND_TIMEOUT_MS + MARGIN_MS)
    }
    expect(errors.length).toBeGreaterThanOrEqual(15)
    expect(store.errors).toBe(errors.length)
    expect(errors.map((event) => event.operation)).toEqual(expect.arrayContaining(['get', 'set', 'delete']))

    await server.restart() // empty: nothing persisted
    await until(
      'store working after restart',
      async () => {
        await store.set('k', { value: Buffer.from('back'), storedAt: 3 }, 60_000)
        return (await store.get('k'))?.value.toString() === 'back'
      },
      8000,
    )
    expect(isRedisUp(client)).toBe(true)
  })

  it('gives up after commandTimeoutMs while Redis hangs, even on a client without its own timeout', async () => {
    // A client configured elsewhere: offline queue on, no commandTimeout; only the store's timer helps.
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 })
    clients.push(client)
    await ready(client)
    const store = createRedisStore({ redis: client, prefix: 'p:', commandTimeoutMs: COMMAND_TIMEOUT_MS, now: Date.now })
    const errors = errorsOf(store)
    server.pause()
    try {
      const get = await timed(store.get('k'))
      const set = await timed(store.set('k', { value: Buffer.from('v'), storedAt: 0 }, 60_000))
      expect(get.result).toBeUndefined()
      expect(get.ms).toBeLessThan(COMMAND_TIMEOUT_MS + MARGIN_MS)
      expect(set.ms).toBeLessThan(COMMAND_TIMEOUT_MS + MARGIN_MS)
      expect(errors.map((event) => [event.operation, event.timedOut])).toEqual([
        ['get', true],
        ['set', true],
      ])
    } finally {
      server.resume()
    }
    const before = store.errors
    await store.set('after', { value: Buffer.from('resumed'), storedAt: 0 }, 60_000)
    expect((await store.get('after'))?.value.toString()).toBe('resumed')
    expect(store.errors).toBe(before)
  })

  it('never throws when the client cannot connect at all', async () => {
    const dead = await startRedis()
    await dead.kill()
    const client = connect(dead.url)
    const store = createRedisStore({ redis: client, prefix: 'p:', commandTimeoutMs: COMMAND_TIMEOUT_MS, now: Date.now })
    const { result, ms } = await timed(Promise.all([store.get('k'), store.set('k', { value: Buffer.from('v'), storedAt: 0 }, 1000), store.delete('k')]))
    expect(result).toEqual([undefined, undefined, undefined])
    expect(ms).toBeLessThan(COMMAND_TIMEOUT_MS + MARGIN_MS)
    expect(store.errors).toBe(3)
    expect(isRedisUp(client)).toBe(false)
  })
})
