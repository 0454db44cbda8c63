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
