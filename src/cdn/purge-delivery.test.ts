import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Timers } from '../timers.js'
import { createPurgeDelivery, type PurgeDeliveryOptions, type PurgeReport } from './purge-delivery.js'
import type { PurgeAnswer, PurgeTarget, TargetName } from './purge-target.js'

/** Timers that fire only when the test says so, and remember what each was set for. */
function manualTimers() {
  const pending: Array<{ callback: () => void; ms: number; cleared: boolean }> = []
  const timers: Timers = {
    setTimeout(callback, ms) {
      const timer = { callback, ms, cleared: false }
      pending.push(timer)
      return timer
    },
    clearTimeout(handle) {
      ;(handle as { cleared: boolean }).cleared = true
    },
  }
  const live = () => pending.filter((t) => !t.cleared)
  return {
    timers,
    /** The delays of the timers set and not yet fired or cleared. */
    waiting: () => live().map((t) => t.ms),
    fire() {
      const timer = live()[0]
      if (!timer) throw new Error('no timer to fire')
      timer.cleared = true
      timer.callback()
    },
  }
}

/** A target whose every request waits until the test answers it. */
function heldTarget(name: TargetName = 'varnish', maxKeys = 256) {
  const calls: Array<{ keys: string[]; answer: (a: PurgeAnswer) => void; signal: AbortSignal }> = []
  const target: PurgeTarget = {
    name,
    where: `${name}-test`,
    maxKeys,
    purge: (keys, signal) => new Promise((resolve) => calls.push({ keys: [...keys], answer: resolve, signal })),
  }
  return { target, calls }
}

/** A target that acknowledges at once and records what it was sent. */
function recordingTarget(maxKeys: number, name: TargetName = 'fastly') {
  const sent: string[][] = []
  const target: PurgeTarget = { name, where: 'test', maxKeys, purge: async (keys) => (sent.push([...keys]), { kind: 'ok' }) }
  return { target, sent }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

function logRecorder() {
  const lines: Array<{ level: string; details: Record<string, unknown>; message: string }> = []
  const at = (level: string) => (details: object, message: string) => void lines.push({ level, details: details as Record<string, unknown>, message })
  return { logger: { info: at('info'), warn: at('warn'), error: at('error') }, lines }
}

function delivery(targets: PurgeTarget[], extra: Partial<PurgeDeliveryOptions> = {}) {
  const clock = manualTimers()
  const log = logRecorder()
  const reports: PurgeReport[] = []
  let now = 1_000_000
  const queue = createPurgeDelivery({
    targets, logger: log.logger, now: () => now, random: () => 0.5, timers: clock.timers,
    giveUpAfterMs: 3_600_000, report: (r) => reports.push(r), ...extra,
  })
  return { queue, clock, log, reports, advance: (ms: number) => void (now += ms), now: () => now }
}

describe('the purge delivery queue', () => {
  it('sends queued keys at once and logs one line with target, keys, lag and attempt when acknowledged', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target])
    d.queue.enqueue(['cms-page-3', 'cms-children-1'], d.now())
    expect(calls.map((c) => c.keys)).toEqual([['cms-page-3', 'cms-children-1']])
    d.advance(120)
    calls[0]!.answer({ kind: 'ok' })
    await d.queue.idle()
    const info = d.log.lines.filter((l) => l.level === 'info')
    expect(info).toEqual([{ level: 'info', message: 'cdn purge: acknowledged', details: { target: 'varnish', where: 'varnish-test', keys: 2, attempt: 1, lagMs: 120 } }])
    expect(d.reports).toEqual([{ target: 'varnish', outcome: 'ok', keys: 2, lagMs: 120 }])
  })

  it('merges keys arriving while a purge is in flight into the next one, deduplicated, and sends again a key already in flight', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target])
    d.queue.enqueue(['cms-page-3'], d.now())
    d.queue.enqueue(['cms-page-3', 'cms-page-4'], d.now())
    d.queue.enqueue(['cms-page-4', 'cms-page-5'], d.now())
    expect(calls).toHaveLength(1)
    calls[0]!.answer({ kind: 'ok' })
    await settle()
    expect(calls.map((c) => c.keys)).toEqual([['cms-page-3'], ['cms-page-3', 'cms-page-4', 'cms-page-5']])
    calls[1]!.answer({ kind: 'ok' })
    await d.queue.idle()
  })

  it('collapses to cms-pages past the bound of waiting keys, and as soon as cms-pages itself waits', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target], { maxPendingKeys: 3 })
    d.queue.enqueue(['first'], d.now())
    d.queue.enqueue(['a', 'b', 'c'], d.now())
    d.queue.enqueue(['d'], d.now())
    calls[0]!.answer({ kind: 'ok' })
    await settle()
    expect(calls[1]!.keys).toEqual(['cms-pages'])
    d.queue.enqueue(['e', 'cms-pages'], d.now())
    d.queue.enqueue(['f'], d.now())
    calls[1]!.answer({ kind: 'ok' })
    await settle()
    expect(calls[2]!.keys).toEqual(['cms-pages'])
    calls[2]!.answer({ kind: 'ok' })
    await d.queue.idle()
  })

  it('collapses a tree-wide change naming 200,000 keys to one cms-pages purge', async () => {
    const { target, sent } = recordingTarget(256)
    const d = delivery([target])
    d.queue.enqueue(Array.from({ length: 200_000 }, (_, i) => `cms-page-${i}`), d.now())
    await d.queue.idle()
    expect(sent).toEqual([['cms-pages']])
  })

  it('retries a 429 after the Retry-After it asked for when that is longer than the backoff, bounded by the cap', async () => {
    const { target, calls } = heldTarget('cloudflare')
    const d = delivery([target], { retryCapMs: 60_000 })
    d.queue.enqueue(['cms-page-3'], d.now())
    calls[0]!.answer({ kind: 'retry', reason: '429', retryAfterMs: 7_000 })
    await settle()
    expect(d.clock.waiting()).toEqual([7_000])
    expect(d.reports).toEqual([{ target: 'cloudflare', outcome: 'retried', keys: 1, lagMs: 0 }])
    expect(d.log.lines.find((l) => l.level === 'warn')).toMatchObject({ message: 'cdn purge: failed, retrying', details: { reason: '429', delayMs: 7_000 } })
    d.clock.fire()
    await settle()
    calls[1]!.answer({ kind: 'retry', reason: '429', retryAfterMs: 3_600_000 })
    await settle()
    expect(d.clock.waiting()).toEqual([60_000])
    d.clock.fire()
    await settle()
    calls[2]!.answer({ kind: 'ok' })
    await d.queue.idle()
    expect(calls.map((c) => c.keys)).toEqual([['cms-page-3'], ['cms-page-3'], ['cms-page-3']])
    expect(d.reports.map((r) => r.outcome)).toEqual(['retried', 'retried', 'ok'])
  })

  it('backs off exponentially with jitter on network errors and 5xx, and takes keys that arrived meanwhile along', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target])
    d.queue.enqueue(['cms-page-3'], d.now())
    const delays: number[] = []
    for (let attempt = 0; attempt < 4; attempt++) {
      calls[attempt]!.answer({ kind: 'retry', reason: 'ECONNREFUSED' })
      await settle()
      delays.push(...d.clock.waiting())
      if (attempt === 1) d.queue.enqueue(['cms-page-4'], d.now())
      d.clock.fire()
      await settle()
    }
    // Equal jitter with random() = 0.5: three quarters of 1 s, 2 s, 4 s, 8 s.
    expect(delays).toEqual([750, 1_500, 3_000, 6_000])
    expect(calls[4]!.keys).toEqual(['cms-page-3', 'cms-page-4'])
    calls[4]!.answer({ kind: 'ok' })
    await d.queue.idle()
  })

  it('logs a refusal (4xx other than 429) once as a warning and does not retry it', async () => {
    const { target, calls } = heldTarget('fastly')
    const d = delivery([target])
    d.queue.enqueue(['cms-page-3'], d.now())
    calls[0]!.answer({ kind: 'fail', reason: '401: Provided credentials are missing or invalid' })
    await d.queue.idle()
    expect(calls).toHaveLength(1)
    expect(d.clock.waiting()).toEqual([])
    expect(d.log.lines.filter((l) => l.level !== 'info')).toEqual([
      expect.objectContaining({ level: 'warn', message: 'cdn purge: refused, not retried', details: expect.objectContaining({ target: 'fastly', reason: expect.stringContaining('401') }) }),
    ])
    expect(d.reports).toEqual([{ target: 'fastly', outcome: 'failed', keys: 1, lagMs: 0 }])
  })

  it('gives a batch up once its oldest key would wait past giveUpAfterMs', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target], { giveUpAfterMs: 10_000 })
    d.queue.enqueue(['cms-page-3'], d.now())
    d.advance(9_500)
    calls[0]!.answer({ kind: 'retry', reason: '503' })
    await d.queue.idle()
    expect(d.reports.map((r) => r.outcome)).toEqual(['failed'])
    expect(d.log.lines.at(-1)?.message).toContain('given up')
  })

  it('splits more keys than a request may carry into requests at the limit, one after the other', async () => {
    const { target, sent } = recordingTarget(100)
    const d = delivery([target])
    const keys = Array.from({ length: 250 }, (_, i) => `cms-page-${i}`)
    d.queue.enqueue(keys, d.now())
    await d.queue.idle()
    expect(sent.map((batch) => batch.length)).toEqual([100, 100, 50])
    expect(sent.flat()).toEqual(keys)
  })

  it('keeps the targets apart: one that hangs holds back none of the others', async () => {
    const hanging = heldTarget('varnish')
    const { target, sent } = recordingTarget(256, 'fastly')
    const d = delivery([hanging.target, target])
    d.queue.enqueue(['cms-page-3'], d.now())
    d.queue.enqueue(['cms-page-4'], d.now())
    await settle()
    expect(sent).toEqual([['cms-page-3'], ['cms-page-4']])
    expect(hanging.calls).toHaveLength(1)
    hanging.calls[0]!.answer({ kind: 'ok' })
    await settle()
    expect(hanging.calls[1]!.keys).toEqual(['cms-page-4'])
    hanging.calls[1]!.answer({ kind: 'ok' })
    await d.queue.idle()
  })

  it('never throws from enqueue, not even when a target throws synchronously or a report listener throws', async () => {
    const broken: PurgeTarget = { name: 'varnish', where: 'broken', maxKeys: 10, purge: () => { throw new Error('boom') } }
    const d = delivery([broken], { report: () => { throw new Error('listener') }, giveUpAfterMs: 0 })
    expect(() => d.queue.enqueue(['cms-page-3'], d.now())).not.toThrow()
    await d.queue.idle()
    expect(d.log.lines.map((l) => l.message)).toContain('cdn purge: given up, the cached copies expire by themselves now')
  })

  it('on close, aborts the request in flight, ends a retry wait and drops what is queued', async () => {
    const { target, calls } = heldTarget()
    const d = delivery([target])
    d.queue.enqueue(['cms-page-3'], d.now())
    calls[0]!.answer({ kind: 'retry', reason: '503' })
    await settle()
    d.queue.enqueue(['cms-page-4'], d.now())
    expect(d.clock.waiting()).toHaveLength(1)
    await d.queue.close()
    expect(d.clock.waiting()).toEqual([])
    expect(calls).toHaveLength(1)
    d.queue.enqueue(['cms-page-5'], d.now())
    expect(calls).toHaveLength(1)
    await d.queue.idle()

    const held = heldTarget()
    const other = delivery([held.target])
    other.queue.enqueue(['cms-page-3'], other.now())
    const closing = other.queue.close()
    expect(held.calls[0]!.signal.aborted).toBe(true)
    held.calls[0]!.answer({ kind: 'retry', reason: 'AbortError' })
    await closing
  })

  it('purges every key enqueued (or cms-pages), never more than the limit per request, whatever arrives when', async () => {
    const key = fc.constantFrom('cms-page-1', 'cms-page-2', 'cms-children-1', 'cms-list', 'cms-section-2', 'cms-ancestors-7', 'cms-pages')
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ keys: fc.array(key, { maxLength: 6 }), ackFirst: fc.boolean() }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 4 }),
        async (steps, maxKeys) => {
          const { target, calls } = heldTarget('varnish', maxKeys)
          const d = delivery([target], { maxPendingKeys: 5 })
          let answered = 0
          for (const step of steps) {
            if (step.ackFirst && answered < calls.length) {
              calls[answered++]!.answer({ kind: 'ok' })
              await settle()
            }
            d.queue.enqueue(step.keys, d.now())
          }
          while (answered < calls.length) {
            calls[answered++]!.answer({ kind: 'ok' })
            await settle()
          }
          await d.queue.idle()
          const sent = calls.flatMap((c) => c.keys)
          for (const call of calls) {
            expect(call.keys.length).toBeGreaterThan(0)
            expect(call.keys.length).toBeLessThanOrEqual(maxKeys)
            expect(new Set(call.keys).size).toBe(call.keys.length)
          }
          const wanted = new Set(steps.flatMap((s) => s.keys))
          if (!sent.includes('cms-pages')) for (const k of wanted) expect(sent).toContain(k)
        },
      ),
      { numRuns: 150 },
    )
  })
})
