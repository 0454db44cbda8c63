/**
 * The request tally against a model that does the obvious thing (fold the labels, find the bucket
 * by scanning, add up): same series, same counts, same buckets, whatever is recorded.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createRequestTally } from './request-tally.js'

const OPTIONS = {
  routes: ['list', 'detail', 'other'],
  caches: ['snapshot', 'hit', 'none'],
  methods: ['GET', 'HEAD', 'PURGE'],
  bounds: [0.001, 0.01, 0.1],
}

describe('request tally', () => {
  it('counts one series per label set and puts each duration in the first bucket that holds it', () => {
    const tally = createRequestTally(OPTIONS)
    tally.record('detail', 'GET', 200, 'snapshot', 0.0004)
    tally.record('detail', 'GET', 200, 'snapshot', 0.001)
    tally.record('detail', 'GET', 200, 'snapshot', 0.5)
    tally.record('list', 'HEAD', 304, 'hit', 0.02)

    expect(tally.series()).toEqual([
      { labels: { route: 'detail', method: 'GET', status: '200', cache: 'snapshot' }, count: 3, observed: 3, sum: 0.5014, buckets: Float64Array.of(2, 0, 0, 1) },
      { labels: { route: 'list', method: 'HEAD', status: '304', cache: 'hit' }, count: 1, observed: 1, sum: 0.02, buckets: Float64Array.of(0, 0, 1, 0) },
    ])
  })

  it('folds what it does not know into bounded labels: other route, none cache, other method, other status', () => {
    const tally = createRequestTally(OPTIONS)
    tally.record('nowhere', 'BREW', 42, 'sideways', 0)
    tally.record('detail', 'purge', 700, 'hit', 0)
    expect(tally.series().map((series) => series.labels)).toEqual([
      { route: 'other', method: 'other', status: 'other', cache: 'none' },
      { route: 'detail', method: 'PURGE', status: 'other', cache: 'hit' },
    ])
  })

  it('counts a request whose duration is not a number without observing it, and a negative one as 0', () => {
    const tally = createRequestTally(OPTIONS)
    tally.record('list', 'GET', 200, 'hit', Number.NaN)
    tally.record('list', 'GET', 200, 'hit', -3)
    const [series] = tally.series()
    expect(series).toMatchObject({ count: 2, observed: 1, sum: 0 })
    expect([...series!.buckets]).toEqual([1, 0, 0, 0])
  })

  it('refuses bounds that are not ascending', () => {
    expect(() => createRequestTally({ ...OPTIONS, bounds: [0.1, 0.01] })).toThrow(RangeError)
  })

  it('agrees with a plain model for any sequence of requests', () => {
    const request = fc.record({
      route: fc.constantFrom('list', 'detail', 'other', 'purge', ''),
      method: fc.constantFrom('GET', 'get', 'HEAD', 'PURGE', 'BREW', ''),
      status: fc.oneof(fc.constantFrom(200, 304, 404, 99, 600), fc.integer(), fc.double()),
      cache: fc.constantFrom('snapshot', 'hit', 'none', 'miss'),
      duration: fc.oneof(fc.double({ min: -1, max: 1, noNaN: false }), fc.constantFrom(0.001, 0.01, 0.1, Infinity)),
    })
    fc.assert(
      fc.property(fc.array(request, { maxLength: 200 }), (requests) => {
        const tally = createRequestTally(OPTIONS)
        const model = new Map<string, { count: number; observed: number; sum: number; buckets: number[] }>()
        for (const r of requests) {
          tally.record(r.route, r.method, r.status, r.cache, r.duration)
          const labels = {
            route: OPTIONS.routes.includes(r.route) ? r.route : 'other',
            method: OPTIONS.methods.includes(r.method.toUpperCase()) ? r.method.toUpperCase() : 'other',
            status: Number.isInteger(r.status) && r.status >= 100 && r.status <= 599 ? String(r.status) : 'other',
            cache: OPTIONS.caches.includes(r.cache) ? r.cache : 'none',
          }
          const key = JSON.stringify(labels)
          const entry = model.get(key) ?? { count: 0, observed: 0, sum: 0, buckets: [0, 0, 0, 0] }
          model.set(key, entry)
          entry.count++
          if (Number.isFinite(r.duration)) {
            const value = Math.max(0, r.duration)
            const bucket = OPTIONS.bounds.findIndex((bound) => value <= bound)
            entry.buckets[bucket < 0 ? OPTIONS.bounds.length : bucket]!++
            entry.observed++
            entry.sum += value
          }
        }
        const got = new Map(tally.series().map((series) => [JSON.stringify(series.labels), series]))
        expect([...got.keys()].sort()).toEqual([...model.keys()].sort())
        for (const [key, expected] of model) {
          const series = got.get(key)!
          expect(series.count).toBe(expected.count)
          expect(series.observed).toBe(expected.observed)
          expect(series.sum).toBeCloseTo(expected.sum, 9)
          expect([...series.buckets]).toEqual(expected.buckets)
        }
      }),
      { seed: 6, numRuns: 300 },
    )
  })
})
