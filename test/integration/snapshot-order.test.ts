/**
 * `order=` by id or first publication is answered from the snapshot when it decides the order
 * alone; where pages share a publication time, or have none, the database puts them in order, so
 * the CMS answers.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, type FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

describe('order from the snapshot', () => {
  it('answers id and first_published_at orders, either way round, exactly and at no CMS cost', async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 40, seed: 5 }) } })
    const root = h.app.shield.sync.current!.rootId
    for (const url of [
      '/api/v1/cms/pages/?order=id', '/api/v1/cms/pages/?order=-id&limit=5&offset=3',
      '/api/v1/cms/pages/?order=first_published_at&limit=20', '/api/v1/cms/pages/?order=-first_published_at&limit=7',
      `/api/v1/cms/pages/?order=-first_published_at&child_of=${root}`, '/api/v1/cms/pages/?order=-first_published_at&type=cms.GenericPage&limit=5',
      `/api/v1/cms/pages/${root}/?order=-first_published_at`,
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it('asks the CMS when two selected pages share a publication time, or one has none', async () => {
    const pages = generateSite({ pages: 20, seed: 5 })
    pages[3]!.firstPublishedAt = pages[4]!.firstPublishedAt
    h = await startShield({ origin: { pages } })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?order=first_published_at')).cmsHits).toBe(1)
    // Apart from the pair, the snapshot decides alone.
    expect((await expectSameAsCms(h, `/api/v1/cms/pages/?order=first_published_at&id=${pages[5]!.id}`)).cmsHits).toBe(0)
    h.origin.updatePage(pages[3]!.id, { firstPublishedAt: null })
    await h.app.shield.sync.syncNow()
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?order=-first_published_at&limit=3')).cmsHits).toBe(1)
  })

  it('follows a new publication time at the next sync', async () => {
    const pages = generateSite({ pages: 20, seed: 5 })
    h = await startShield({ origin: { pages } })
    const before = JSON.parse((await h.get('/api/v1/cms/pages/?order=-first_published_at&limit=1')).body)
    const last = pages[pages.length - 1]!
    h.origin.updatePage(last.id, { firstPublishedAt: '2030-01-01T00:00:00Z' })
    await h.app.shield.sync.syncNow()
    const after = await expectSameAsCms(h, '/api/v1/cms/pages/?order=-first_published_at&limit=1')
    expect(after.cmsHits).toBe(0)
    expect(JSON.parse(after.body).items[0].id).toBe(last.id)
    expect(JSON.parse(after.body).items[0].id === before.items[0].id).toBe(last.id === before.items[0].id)
  })
})

/**
 * A site whose GenericPages have a `DateField` (`date`), a `DateTimeField` (`updated`, written
 * with either offset) and a date shown by a property (`shown_on`, no column); its LandingPages a
 * `DateField` two of them share.
 */
function datedSite(): FakePage[] {
  const pages = generateSite({ pages: 40, seed: 5 })
  let n = 0
  let shared = 0
  return pages.map((page) => {
    n++
    if (page.type === 'cms.GenericPage') {
      const day = new Date(Date.UTC(2020, 0, 1 + n * 3)).toISOString().slice(0, 10)
      const updated = n % 2 === 0 ? `${day}T0${n % 10}:15:00.25Z` : `${day}T1${n % 10}:15:00+02:00`
      return { ...page, extra: { ...page.extra, date: day, updated, shown_on: day } }
    }
    if (page.type === 'cms.LandingPage') return { ...page, extra: { ...page.extra, published: shared++ < 2 ? '2021-05-05' : `2022-0${1 + (n % 9)}-1${n % 10}` } }
    return page
  })
}

describe("a type's own date fields", () => {
  it('orders a typed listing by a DateField or DateTimeField from the snapshot, either way round, exactly and at no CMS cost', async () => {
    h = await startShield({ origin: { pages: datedSite(), columnless: ['shown_on'] } })
    const generic = h.origin.pages().filter((page) => page.type === 'cms.GenericPage')
    const parent = generic[0]!.parentId!
    for (const url of [
      '/api/v1/cms/pages/?type=cms.GenericPage&order=-date', '/api/v1/cms/pages/?type=cms.GenericPage&order=date&limit=3&offset=2',
      '/api/v1/cms/pages/?type=cms.GenericPage&order=-updated&fields=_,title,updated', '/api/v1/cms/pages/?type=cms.GenericPage&order=updated',
      `/api/v1/cms/pages/?type=cms.GenericPage&order=-date&child_of=${parent}`, `/api/v1/cms/pages/${generic[1]!.id}/?type=cms.GenericPage&order=-updated`,
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
    const newest = JSON.parse((await h.get('/api/v1/cms/pages/?type=cms.GenericPage&order=-updated&limit=1&fields=updated')).body)
    const instants = generic.map((page) => Date.parse(String(page.extra!.updated)))
    expect(Date.parse(newest.items[0].updated)).toBe(Math.max(...instants))
  })

  it('asks the CMS where the database decides: shared or empty dates, a field with no column, a listing of several types', async () => {
    const pages = datedSite()
    h = await startShield({ origin: { pages, columnless: ['shown_on'] } })
    const landings = h.origin.pages().filter((page) => page.type === 'cms.LandingPage')
    for (const url of [
      '/api/v1/cms/pages/?type=cms.LandingPage&order=published', '/api/v1/cms/pages/?type=cms.GenericPage&order=shown_on',
      '/api/v1/cms/pages/?type=cms.GenericPage,cms.LandingPage&order=date', '/api/v1/cms/pages/?order=-date',
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
    }
    // Without one of the pair, the dates are distinct again.
    const pair = landings.filter((page) => page.extra!.published === '2021-05-05')
    expect((await expectSameAsCms(h, `/api/v1/cms/pages/?type=cms.LandingPage&order=-published&slug=${pair[0]!.slug}`)).cmsHits).toBe(0)
    const generic = h.origin.pages().find((page) => page.type === 'cms.GenericPage')!
    h.origin.updatePage(generic.id, { extra: { ...generic.extra, date: null } })
    await h.app.shield.sync.syncNow({ full: true })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?type=cms.GenericPage&order=-date&limit=2')).cmsHits).toBe(1)
  })

  it('asks the CMS once per type and field whether it orders by it, and again only at a full sync', async () => {
    h = await startShield({ origin: { pages: datedSite(), columnless: ['shown_on'] }, synced: false })
    const probes = () => h!.origin.requests.filter((request) => request.kind === 'list' && request.url.includes('order=')).map((request) => request.url).sort()
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    expect(probes()).toEqual([
      '/api/v1/cms/pages/?type=cms.GenericPage&order=date&limit=0', '/api/v1/cms/pages/?type=cms.GenericPage&order=shown_on&limit=0',
      '/api/v1/cms/pages/?type=cms.GenericPage&order=updated&limit=0', '/api/v1/cms/pages/?type=cms.LandingPage&order=published&limit=0',
    ])
    expect(h.app.shield.sync.current!.dialect.dateOrders).toEqual({
      'cms.GenericPage': { date: 'date', updated: 'datetime' }, 'cms.LandingPage': { published: 'date' },
    })
    h.origin.resetHits()
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    expect(probes()).toEqual([])
    expect((await h.app.shield.sync.syncNow({ full: true })).ok).toBe(true)
    expect(probes()).toHaveLength(4)
  })

  it('answers on a Wagtail whose OrderingFilter fails on a field with no column (7.0) as that CMS does', async () => {
    h = await startShield({ origin: { pages: datedSite(), columnless: ['shown_on'], version: '7.0' } })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?type=cms.GenericPage&order=-date&limit=4')).cmsHits).toBe(0)
    expect(h.app.shield.sync.current!.dialect.dateOrders?.['cms.GenericPage']).toEqual({ date: 'date', updated: 'datetime' })
  })
})

describe('order, any tree (fast-check against the fake CMS)', () => {
  /** A generated site whose GenericPages have a `date`, shared or left empty now and then; some publication times shared. */
  const site = fc.record({ seed: fc.integer({ min: 1, max: 10_000 }), size: fc.integer({ min: 5, max: 40 }), clash: fc.double({ min: 0, max: 0.3, noNaN: true }) }).map(({ seed, size, clash }) => {
    let state = seed
    const random = () => ((state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    const pages = generateSite({ pages: size, seed })
    return pages.map((page, i): FakePage => {
      const published = random() < clash && i > 1 ? pages[i - 1]!.firstPublishedAt : page.firstPublishedAt
      if (page.type !== 'cms.GenericPage') return { ...page, firstPublishedAt: published }
      const roll = random()
      const date = roll < clash / 2 ? null : roll < clash ? '2021-01-01' : new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10)
      return { ...page, firstPublishedAt: published, extra: { ...page.extra, date } }
    })
  })
  const query = fc.record({
    order: fc.constantFrom('id', '-id', 'first_published_at', '-first_published_at', 'date', '-date'),
    typed: fc.boolean(),
    child: fc.boolean(),
    limit: fc.integer({ min: 1, max: 30 }),
    offset: fc.integer({ min: 0, max: 10 }),
  })

  it('answers exactly as the CMS does, from the snapshot whenever the ordered values are distinct and present', async () => {
    await fc.assert(fc.asyncProperty(site, fc.array(query, { minLength: 4, maxLength: 8 }), async (pages, queries) => {
      const harness = await startShield({ origin: { pages } })
      try {
        for (const q of queries) {
          const field = q.order.replace('-', '')
          const typed = q.typed || field === 'date'
          const parent = harness.origin.pages().find((page) => page.type === 'cms.GenericPage')?.parentId
          const filters = `${typed ? 'type=cms.GenericPage&' : ''}${q.child && parent != null ? `child_of=${parent}&` : ''}`
          const compared = await expectSameAsCms(harness, `/api/v1/cms/pages/?${filters}order=${q.order}&limit=${q.limit}&offset=${q.offset}`)
          if (compared.status !== 200) continue
          // What the CMS orders: distinct and present values decide alone, so the snapshot answers.
          const all = JSON.parse((await harness.origin_get(`/api/v1/cms/pages/?${filters}limit=250&fields=_,${field}`)).body) as { items: Array<Record<string, unknown> & { meta?: Record<string, unknown> }> }
          const values = all.items.map((item) => (field === 'id' ? 0 : field === 'date' ? item.date : item.meta?.first_published_at))
          const decided = field === 'id' || (values.every((value) => value !== null && value !== undefined) && new Set(values).size === values.length)
          expect(compared.cmsHits).toBe(decided ? 0 : 1)
        }
      } finally {
        await harness.close()
      }
    }), { numRuns: 6 })
  })
})
