import { afterEach, describe, expect, it } from 'vitest'
import { costOf, createCostModel, MEASURED_RATES } from './cost-model.js'
import { generateSite, startFakeWagtail } from './index.js'
import type { FakeWagtail } from './index.js'

const PAGES_PATH = '/api/v1/cms/pages/'

/** A hold that ends only when the test says so: the workers stay busy meanwhile. */
function manualHolds() {
  const pending: { ms: number; end: () => void }[] = []
  return {
    pending,
    hold: (ms: number) => new Promise<void>((resolve) => pending.push({ ms, end: resolve })),
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('the cost model', () => {
  it('charges a listing by its items, less without html_url, a detail at its rate, and a fixed part per request', () => {
    const rates = { listItemMs: 3, listItemWithoutUrlMs: 1, detailMs: 20, requestMs: 2 }
    expect(costOf(rates, 'listing', 10, true)).toBe(2 + 30)
    expect(costOf(rates, 'listing', 10, false)).toBe(2 + 10)
    expect(costOf(rates, 'detail')).toBe(22)
    expect(costOf(rates, 'other')).toBe(2)
  })

  it('defaults to the rates measured against Wagtail', () => {
    expect(createCostModel().rates).toEqual(MEASURED_RATES)
  })

  it('adds up the busy time it charged, in total and by kind, and forgets it on reset', async () => {
    const model = createCostModel({ hold: () => Promise.resolve() })
    await Promise.all([model.charge('listing', 7), model.charge('detail', 30), model.charge('detail', 30), model.charge('other', 1)])
    expect(model.busy()).toEqual({ totalMs: 68, listingMs: 7, detailMs: 60, otherMs: 1, requests: 4, waited: 0 })
    model.reset()
    expect(model.busy().totalMs).toBe(0)
  })

  it('makes a request wait while every worker is busy, and serves it when one is freed', async () => {
    const holds = manualHolds()
    const model = createCostModel({ workers: 2, hold: holds.hold })
    const done: string[] = []
    const charges = ['a', 'b', 'c'].map((name) => model.charge('detail', 30).then(() => done.push(name)))
    await turn()
    expect(holds.pending).toHaveLength(2)
    holds.pending[0]!.end()
    await turn()
    expect(done).toEqual(['a'])
    expect(holds.pending).toHaveLength(3)
    holds.pending[1]!.end()
    holds.pending[2]!.end()
    await Promise.all(charges)
    expect(model.busy()).toMatchObject({ requests: 3, waited: 1, totalMs: 90 })
  })
})

describe('the fake Wagtail with a cost model', () => {
  let fake: FakeWagtail | undefined
  afterEach(async () => {
    await fake?.close()
    fake = undefined
  })

  it('charges what the sync reads: listing items with and without html_url, details', async () => {
    const pages = generateSite({ pages: 30, seed: 1 })
    const model = createCostModel({ hold: () => Promise.resolve() })
    fake = await startFakeWagtail({ pages, cost: model })
    const rates = model.rates
    await fetch(`${fake.url}${PAGES_PATH}?limit=20`)
    expect(model.busy().listingMs).toBeCloseTo(rates.requestMs + 20 * rates.listItemMs)
    await fetch(`${fake.url}${PAGES_PATH}?fields=-html_url&limit=20`)
    expect(model.busy().listingMs).toBeCloseTo(2 * rates.requestMs + 20 * (rates.listItemMs + rates.listItemWithoutUrlMs))
    await fetch(`${fake.url}${PAGES_PATH}${pages[1]!.id}/`)
    expect(model.busy().detailMs).toBeCloseTo(rates.requestMs + rates.detailMs)
    await fetch(`${fake.url}/`)
    const busy = model.busy()
    expect(busy.otherMs).toBeCloseTo(rates.requestMs)
    expect(busy.totalMs).toBeCloseTo(busy.listingMs + busy.detailMs + busy.otherMs)
    expect(busy.requests).toBe(4)
  })

  it('charges nothing without a cost model, and stops charging when it is taken away', async () => {
    const model = createCostModel({ hold: () => Promise.resolve() })
    fake = await startFakeWagtail({ pages: generateSite({ pages: 5, seed: 1 }) })
    expect(fake.cost).toBeUndefined()
    fake.setCost(model)
    await fetch(`${fake.url}${PAGES_PATH}`)
    fake.setCost(undefined)
    await fetch(`${fake.url}${PAGES_PATH}`)
    expect(model.busy().requests).toBe(1)
  })
})
