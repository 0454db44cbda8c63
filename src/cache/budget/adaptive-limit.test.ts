import { describe, expect, it } from 'vitest'
import type { Timers } from '../../timers.js'
import { createConcurrencyGate, createLimitEstimate } from './adaptive-limit.js'

/** Timers driven by the test: `advance(ms)` fires what is due. */
function manualTimers() {
  let now = 0
  const pending = new Map<number, { at: number; callback: () => void }>()
  let next = 1
  const timers: Timers = {
    setTimeout: (callback, ms) => {
      const id = next++
      pending.set(id, { at: now + ms, callback })
      return id
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  }
  return {
    timers,
    advance(ms: number) {
      now += ms
      for (const [id, timer] of [...pending]) {
        if (timer.at <= now) {
          pending.delete(id)
          timer.callback()
        }
      }
    },
    get pending() {
      return pending.size
    },
  }
}

describe('latency-following limit', () => {
  it('stays at the ceiling while the CMS answers as fast as usual', () => {
    const estimate = createLimitEstimate(8)
    for (let i = 0; i < 100; i++) estimate.sample(100, true, 8)
    expect(estimate.limit).toBe(8)
  })

  it('shrinks when the CMS gets much slower than usual, and grows back once it keeps up again', () => {
    const estimate = createLimitEstimate(16)
    for (let i = 0; i < 50; i++) estimate.sample(100, true, 16)
    for (let i = 0; i < 10; i++) estimate.sample(1_000, true, 16)
    const slowed = estimate.limit
    expect(slowed).toBeLessThan(8)
    for (let i = 0; i < 200; i++) estimate.sample(100, true, 16)
    expect(estimate.limit).toBe(16)
  })

  it('loses a tenth per failure, never below one', () => {
    const estimate = createLimitEstimate(10)
    estimate.sample(0, false, 10)
    expect(estimate.limit).toBeCloseTo(9)
    for (let i = 0; i < 100; i++) estimate.sample(0, false, 10)
    expect(estimate.limit).toBe(1)
  })

  it('does not grow on samples taken while most places were idle', () => {
    const estimate = createLimitEstimate(10)
    for (let i = 0; i < 5; i++) estimate.sample(0, false, 10)
    const reduced = estimate.limit
    for (let i = 0; i < 50; i++) estimate.sample(100, true, 0)
    expect(estimate.limit).toBeCloseTo(reduced)
  })
})

describe('concurrency gate', () => {
  it('lets the limit in at once, queues the next, and hands a freed place to the first in line', async () => {
    const clock = manualTimers()
    const gate = createConcurrencyGate({ max: 2, adaptive: false, queueTimeoutMs: 500, maxQueue: 4, timers: clock.timers })
    const first = await gate.acquire()
    const second = await gate.acquire()
    expect(first.ok && second.ok).toBe(true)
    const third = gate.acquire()
    expect(gate.queued).toBe(1)
    if (first.ok) first.slot.release({ rttMs: 10, ok: true })
    const granted = await third
    expect(granted.ok).toBe(true)
    expect(gate.inFlight).toBe(2)
    expect(clock.pending).toBe(0)
  })

  it('refuses a waiter when the queue timeout passes, and at once when the queue is full', async () => {
    const clock = manualTimers()
    const gate = createConcurrencyGate({ max: 1, adaptive: false, queueTimeoutMs: 500, maxQueue: 1, timers: clock.timers })
    await gate.acquire()
    const waiting = gate.acquire()
    expect(await gate.acquire()).toEqual({ ok: false, reason: 'queue_full' })
    clock.advance(499)
    expect(gate.queued).toBe(1)
    clock.advance(1)
    expect(await waiting).toEqual({ ok: false, reason: 'queue_timeout' })
    expect(gate.queued).toBe(0)
  })

  it('refuses at once with a queue timeout of 0', async () => {
    const gate = createConcurrencyGate({ max: 1, adaptive: false, queueTimeoutMs: 0, maxQueue: 10, timers: manualTimers().timers })
    await gate.acquire()
    expect(await gate.acquire()).toEqual({ ok: false, reason: 'queue_full' })
  })

  it('frees a place once, however often it is released', async () => {
    const gate = createConcurrencyGate({ max: 1, adaptive: true, queueTimeoutMs: 0, maxQueue: 0, timers: manualTimers().timers })
    const held = await gate.acquire()
    if (!held.ok) throw new Error('expected a place')
    held.slot.release({ rttMs: 5, ok: true })
    held.slot.release({ rttMs: 5, ok: true })
    held.slot.cancel()
    expect(gate.inFlight).toBe(0)
    expect((await gate.acquire()).ok).toBe(true)
    expect(gate.inFlight).toBe(1)
  })

  it('admits fewer at once after the CMS failed, with the configured concurrency as the ceiling', async () => {
    const gate = createConcurrencyGate({ max: 4, adaptive: true, queueTimeoutMs: 0, maxQueue: 0, timers: manualTimers().timers })
    for (let i = 0; i < 20; i++) {
      const place = await gate.acquire()
      if (place.ok) place.slot.release({ rttMs: 10_000, ok: false })
    }
    expect(gate.limit).toBe(1)
    expect((await gate.acquire()).ok).toBe(true)
    expect(await gate.acquire()).toEqual({ ok: false, reason: 'queue_full' })
  })
})
