import { describe, expect, it } from 'vitest'
import { createConcurrencyGate } from './adaptive-limit.js'
import { createReadThroughBudget, type RefusalReason } from './read-through-budget.js'
import { createSharedBucket } from './shared-bucket.js'
import { createLocalBuckets } from './token-bucket.js'

const noTimers = { setTimeout: () => 0, clearTimeout: () => undefined }

function budget(limits: { clientBurst: number; burst: number; concurrency: number }) {
  const now = () => 0
  const clients = createLocalBuckets({ ratePerSecond: 1, burst: limits.clientBurst }, now)
  const gate = createConcurrencyGate({ max: limits.concurrency, adaptive: false, queueTimeoutMs: 0, maxQueue: 0, timers: noTimers })
  const cms = createSharedBucket({ key: 'k', limits: { ratePerSecond: 1, burst: limits.burst }, now, isUp: () => false })
  const refused: RefusalReason[] = []
  const subject = createReadThroughBudget({ clients, gate, cms, busyRetryAfterMs: 1000, onRefused: (reason) => refused.push(reason) })
  return { subject, clients, gate, cms, refused }
}

describe('read-through budget', () => {
  it("refuses a client over its share without touching the CMS budget or a place in flight", async () => {
    const { subject, gate, cms, refused } = budget({ clientBurst: 1, burst: 5, concurrency: 5 })
    const first = await subject.admit('a')
    expect(first.ok).toBe(true)
    const second = await subject.admit('a')
    expect(second).toEqual({ ok: false, reason: 'client_share', retryAfterMs: 1000 })
    expect(cms.tokens).toBe(4)
    expect(gate.inFlight).toBe(1)
    expect(refused).toEqual(['client_share'])
  })

  it("gives the client's token back when no place in flight is free", async () => {
    const { subject, clients, refused } = budget({ clientBurst: 1, burst: 5, concurrency: 1 })
    expect((await subject.admit('a')).ok).toBe(true)
    expect(await subject.admit('b')).toEqual({ ok: false, reason: 'queue_full', retryAfterMs: 1000 })
    expect(clients.tokens('b')).toBe(1)
    expect(refused).toEqual(['queue_full'])
  })

  it("gives the place and the client's token back when the CMS budget is spent", async () => {
    const { subject, clients, gate, refused } = budget({ clientBurst: 2, burst: 1, concurrency: 5 })
    const first = await subject.admit('a')
    expect(first.ok).toBe(true)
    const second = await subject.admit('a')
    expect(second).toMatchObject({ ok: false, reason: 'cms_budget' })
    expect(gate.inFlight).toBe(1)
    expect(clients.tokens('a')).toBe(1)
    expect(refused).toEqual(['cms_budget'])
    if (first.ok) first.release({ rttMs: 1, ok: true })
    expect(gate.inFlight).toBe(0)
  })

  it('charges no client for a request no client waits on', async () => {
    const { subject, clients } = budget({ clientBurst: 1, burst: 5, concurrency: 5 })
    expect((await subject.admit(undefined)).ok).toBe(true)
    expect(clients.size).toBe(0)
    expect(subject.state()).toEqual({ scope: 'local', tokens: 4, concurrencyLimit: 5, inFlight: 1, queued: 0, clients: 0 })
  })
})

describe('a spent share refused before the work a granted miss needs', () => {
  function withClock(clientBurst: number, hold?: { ms: number; timers: { setTimeout(callback: () => void, ms: number): unknown } }) {
    const clock = { now: 0 }
    const now = () => clock.now
    const clients = createLocalBuckets({ ratePerSecond: 2, burst: clientBurst }, now)
    const gate = createConcurrencyGate({ max: 5, adaptive: false, queueTimeoutMs: 0, maxQueue: 0, timers: noTimers })
    const cms = createSharedBucket({ key: 'k', limits: { ratePerSecond: 1, burst: 5 }, now, isUp: () => false })
    const refused: RefusalReason[] = []
    const subject = createReadThroughBudget({
      clients, gate, cms, busyRetryAfterMs: 1000, onRefused: (reason) => refused.push(reason),
      ...(hold ? { clientRefusalDelayMs: hold.ms, timers: hold.timers, random: () => 1, now } : {}),
    })
    return { clock, subject, clients, gate, cms, refused }
  }

  it('spends nothing and refuses nothing while the share holds a token', async () => {
    const { subject, clients, gate, cms, refused } = withClock(2)
    expect(subject.refuseSpentShare('a')).toBeUndefined()
    expect(clients.tokens('a')).toBe(2)
    expect(gate.inFlight).toBe(0)
    expect(cms.tokens).toBe(5)
    expect(refused).toEqual([])
    expect((await subject.admit('a')).ok).toBe(true)
  })

  it('refuses as admit would, for the client share, once the share is spent', async () => {
    const { subject, cms, refused } = withClock(1)
    expect((await subject.admit('a')).ok).toBe(true)
    const early = subject.refuseSpentShare('a')
    expect(early).toBeDefined()
    expect(await early).toEqual({ ok: false, reason: 'client_share', retryAfterMs: 500 })
    expect(cms.tokens).toBe(4)
    expect(refused).toEqual(['client_share'])
    expect(subject.refuseSpentShare('b')).toBeUndefined()
  })

  it('never refuses a client whose share has refilled', async () => {
    const { clock, subject, clients } = withClock(1)
    expect((await subject.admit('a')).ok).toBe(true)
    clock.now += 499
    expect(subject.refuseSpentShare('a')).toBeDefined()
    clock.now += 1
    expect(subject.refuseSpentShare('a')).toBeUndefined()
    // Asking took nothing: the refilled token is still there for the miss itself.
    expect(clients.tokens('a')).toBe(1)
    expect((await subject.admit('a')).ok).toBe(true)
  })

  it('holds the refusals of one slot on one timer before answering them', async () => {
    const timers: Array<{ ms: number; fire: () => void }> = []
    const { subject } = withClock(1, { ms: 400, timers: { setTimeout: (fire, ms) => timers.push({ ms, fire }) } })
    expect((await subject.admit('a')).ok).toBe(true)
    let answered = 0
    for (let i = 0; i < 3; i++) void subject.refuseSpentShare('a')!.then(() => answered++)
    void subject.admit('a').then(() => answered++)
    await Promise.resolve()
    // `random` is 1: every hold is the whole 400 ms, all in the slot ending then.
    expect(timers).toEqual([{ ms: 400, fire: expect.any(Function) }])
    expect(answered).toBe(0)
    timers[0]!.fire()
    await new Promise((resolve) => setImmediate(resolve))
    expect(answered).toBe(4)
  })
})
