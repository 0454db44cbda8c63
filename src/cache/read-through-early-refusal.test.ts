import { describe, expect, it } from 'vitest'
import { createConcurrencyGate } from './budget/adaptive-limit.js'
import { createReadThroughBudget } from './budget/read-through-budget.js'
import { createSharedBucket } from './budget/shared-bucket.js'
import { createLocalBuckets } from './budget/token-bucket.js'
import { createReadThrough, isOverBudget, type StoredAnswer } from './read-through.js'
import type { SharedFlight } from './shared-flight.js'
import { createMemoryStore } from './stores/memory-store.js'

const noTimers = { setTimeout: () => 0, clearTimeout: () => undefined }
const policy = { ttlMs: 60_000, negativeTtlMs: 10_000, staleWhileRevalidateMs: 0, staleIfErrorMs: 600_000, jitter: 0 }

function subject() {
  const clock = { now: 1_000_000 }
  const now = () => clock.now
  const budget = createReadThroughBudget({
    // One miss per 1,000 s: a share spent stays spent while entries go stale.
    clients: createLocalBuckets({ ratePerSecond: 0.001, burst: 1 }, now),
    gate: createConcurrencyGate({ max: 4, adaptive: false, queueTimeoutMs: 0, maxQueue: 0, timers: noTimers }),
    cms: createSharedBucket({ key: 'k', limits: { ratePerSecond: 10, burst: 10 }, now, isUp: () => false }),
    busyRetryAfterMs: 1000,
  })
  const loaded: string[] = []
  const locks: string[] = []
  // Stands in for the lock in Redis: counts who asked for it, and always wins it.
  const sharedFlight: SharedFlight = {
    run: (key, work) => {
      locks.push(key)
      return work()
    },
    ready: async () => undefined,
    close: () => undefined,
  }
  const readThrough = createReadThrough({
    load: async (pathAndQuery): Promise<StoredAnswer> => {
      loaded.push(pathAndQuery)
      return { status: 200, contentType: 'application/json', body: Buffer.from(`{"q":"${pathAndQuery}"}`), storedAt: clock.now, cacheable: true }
    },
    tiers: [createMemoryStore({ maxBytes: 1_000_000, now })],
    policy,
    sharedFlight,
    now,
    random: () => 0,
    logger: { warn: () => undefined, debug: () => undefined },
    budget,
  })
  return { clock, readThrough, loaded, locks }
}

describe('read-through misses of a client whose share is spent', () => {
  it('are refused without taking the lock in Redis or asking the CMS', async () => {
    const { readThrough, loaded, locks } = subject()
    expect((await readThrough.get('k1', '?search=a', { client: 'c' })).outcome).toBe('miss')
    const refusal = await readThrough.get('k2', '?search=b', { client: 'c' }).catch((error: unknown) => error)
    expect(isOverBudget(refusal)).toBe(true)
    expect(refusal).toMatchObject({ code: 'READ_THROUGH_CLIENT_SHARE', details: { reason: 'client_share', retryAfterMs: 1_000_000, client: 'c' } })
    expect(loaded).toEqual(['?search=a'])
    expect(locks).toEqual(['k1'])
  })

  it('still get what is stored, and reach the CMS again once the share refills', async () => {
    const { clock, readThrough, loaded } = subject()
    await readThrough.get('k1', '?search=a', { client: 'c' })
    // Stored and fresh: a hit, whatever the share.
    expect((await readThrough.get('k1', '?search=a', { client: 'c' })).outcome).toBe('hit')
    // Past freshness: the stored answer instead of a refusal.
    clock.now += policy.ttlMs + 1
    expect((await readThrough.get('k1', '?search=a', { client: 'c' })).outcome).toBe('stale-budget')
    await expect(readThrough.get('k3', '?search=c', { client: 'c' })).rejects.toMatchObject({ code: 'READ_THROUGH_CLIENT_SHARE' })
    // Another client's share is its own.
    expect((await readThrough.get('k3', '?search=c', { client: 'd' })).outcome).toBe('miss')
    clock.now += 1_000_000
    expect((await readThrough.get('k4', '?search=d', { client: 'c' })).outcome).toBe('miss')
    expect(loaded).toEqual(['?search=a', '?search=c', '?search=d'])
  })
})
