/**
 * The cluster's CMS budget in a real Redis: the Lua script grants what the in-process arithmetic
 * grants, instances share one bucket, and a Redis that cannot be reached turns into a bucket of
 * the instance's own instead of a failed read.
 */
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { sharedRedisUrl } from '../../../test/helpers/redis-server.js'
import { createRedisClient, isRedisUp, type RedisClient } from '../stores/redis-client.js'
import { createSharedBucket, type BucketScope } from './shared-bucket.js'
import { take, type BucketState } from './token-bucket.js'

const clients: RedisClient[] = []
afterAll(() => {
  for (const client of clients) client.disconnect()
})

async function redis(): Promise<RedisClient> {
  const client = createRedisClient({ url: await sharedRedisUrl(), commandTimeoutMs: 1000, connectTimeoutMs: 2000 })
  clients.push(client)
  if (!isRedisUp(client)) await new Promise<void>((resolve) => client.once('ready', () => resolve()))
  return client
}

describe('shared bucket', () => {
  it('grants in Redis exactly what the arithmetic grants, for any spacing of requests', async () => {
    const client = await redis()
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 40 }),
        async (ratePerSecond, burst, gaps) => {
          const limits = { ratePerSecond, burst }
          let now = 1_700_000_000_000
          const bucket = createSharedBucket({ redis: client, key: `test:bucket:${randomUUID()}`, limits, now: () => now, isUp: () => true })
          let state: BucketState | undefined
          let refused = false
          for (const gap of gaps) {
            now += gap
            const expected = take(state, limits, now)
            // A refusal after a refusal is the remembered one's: Redis, not asked, keeps its state.
            if (!(refused && !expected.ok)) state = expected.state
            refused = !expected.ok
            const got = await bucket.take()
            expect(got.scope).toBe('cluster')
            expect(got.ok).toBe(expected.ok)
            expect(got.retryAfterMs).toBe(expected.retryAfterMs)
            expect(got.tokens).toBeCloseTo(expected.state.tokens, 6)
          }
        },
      ),
      { numRuns: 25 },
    )
  })

  it('is one bucket for every instance sharing the key', async () => {
    const key = `test:bucket:${randomUUID()}`
    const now = () => 1_700_000_000_000
    const limits = { ratePerSecond: 1, burst: 3 }
    const instances = await Promise.all([1, 2, 3].map(async () => createSharedBucket({ redis: await redis(), key, limits, now, isUp: () => true })))
    const granted = (await Promise.all(instances.flatMap((bucket) => [bucket.take(), bucket.take()]))).filter((result) => result.ok)
    expect(granted).toHaveLength(3)
  })

  it('gives a token back to the cluster', async () => {
    const bucket = createSharedBucket({ redis: await redis(), key: `test:bucket:${randomUUID()}`, limits: { ratePerSecond: 1, burst: 1 }, now: () => 5_000, isUp: () => true })
    expect((await bucket.take()).ok).toBe(true)
    expect((await bucket.take()).ok).toBe(false)
    await bucket.giveBack('cluster')
    expect((await bucket.take()).ok).toBe(true)
  })

  it("spends the instance's own bucket while Redis is down, says so once, and goes back to the cluster's", async () => {
    let up = false
    const scopes: BucketScope[] = []
    const bucket = createSharedBucket({
      redis: await redis(),
      key: `test:bucket:${randomUUID()}`,
      limits: { ratePerSecond: 1, burst: 2 },
      now: () => 9_000,
      isUp: () => up,
      onScopeChange: (scope) => scopes.push(scope),
    })
    const whileDown = [await bucket.take(), await bucket.take(), await bucket.take()]
    expect(whileDown.map((result) => [result.scope, result.ok])).toEqual([['local', true], ['local', true], ['local', false]])
    expect(bucket.scope).toBe('local')
    up = true
    const back = await bucket.take()
    expect([back.scope, back.ok]).toEqual(['cluster', true])
    expect(scopes).toEqual(['local', 'cluster'])
  })

  it('falls back to its own bucket when a Redis command fails, without failing the caller', async () => {
    const broken = createRedisClient({ url: 'redis://127.0.0.1:1', commandTimeoutMs: 50, connectTimeoutMs: 50 })
    clients.push(broken)
    const scopes: BucketScope[] = []
    const bucket = createSharedBucket({
      redis: broken,
      key: 'test:bucket:broken',
      limits: { ratePerSecond: 1, burst: 1 },
      now: () => 0,
      // Claims to be up, so the command is tried and fails.
      isUp: () => true,
      onScopeChange: (scope) => scopes.push(scope),
    })
    const result = await bucket.take()
    expect([result.scope, result.ok]).toEqual(['local', true])
    expect(scopes).toEqual(['local'])
  })

  it('without Redis, is the instance\'s own bucket from the start', async () => {
    const bucket = createSharedBucket({ key: 'unused', limits: { ratePerSecond: 1, burst: 1 }, now: () => 0, isUp: () => false })
    expect(bucket.scope).toBe('local')
    expect((await bucket.take()).ok).toBe(true)
    expect((await bucket.take()).ok).toBe(false)
  })
})

describe("the cluster's refusal remembered", () => {
  it('refuses as the script would, without asking Redis, until a token has grown back, then asks again', async () => {
    const client = await redis()
    const key = `test:bucket:${randomUUID()}`
    let now = 1_700_000_000_000
    const limits = { ratePerSecond: 4, burst: 1 }
    const bucket = createSharedBucket({ redis: client, key, limits, now: () => now, isUp: () => true })
    expect((await bucket.take()).ok).toBe(true)
    const first = await bucket.take()
    expect(first).toMatchObject({ ok: false, retryAfterMs: 250, scope: 'cluster' })
    // From here the bucket in Redis is emptied behind this instance's back: were Redis asked, the
    // answers would change; remembered, they follow the arithmetic of the last refusal.
    await client.hset(key, 't', '-5')
    now += 100
    expect(await bucket.take()).toMatchObject({ ok: false, retryAfterMs: 150, scope: 'cluster', tokens: 0.4 })
    now += 149
    // The script's own arithmetic, float rounding and all (0.996 tokens: 1.0000000000000009 ms, so 2).
    const refusedAt = now - 249
    expect(await bucket.take()).toMatchObject({ ok: false, retryAfterMs: take({ tokens: 0, at: refusedAt }, limits, now).retryAfterMs })
    // A whole token has grown back since the refusal: Redis is asked (and refuses, as emptied).
    now += 1
    const asked = await bucket.take()
    expect(asked.ok).toBe(false)
    expect(asked.retryAfterMs).toBeGreaterThan(1000)
  })

  it('never refuses once a token has grown back, nor after a token was given back', async () => {
    const client = await redis()
    let now = 1_700_000_000_000
    const bucket = createSharedBucket({ redis: client, key: `test:bucket:${randomUUID()}`, limits: { ratePerSecond: 3, burst: 1 }, now: () => now, isUp: () => true })
    expect((await bucket.take()).ok).toBe(true)
    expect((await bucket.take()).ok).toBe(false)
    // 1000 / 3 ms: a token is back at 333.33 ms, so at 334.
    now += 333
    expect((await bucket.take()).ok).toBe(false)
    now += 1
    expect((await bucket.take()).ok).toBe(true)
    expect((await bucket.take()).ok).toBe(false)
    await bucket.giveBack('cluster')
    expect((await bucket.take()).ok).toBe(true)
  })
})
