/**
 * What the snapshot already decides costs no CMS request, and what the CMS said does not exist
 * (a `type`, a find path) is asked once per snapshot, whatever else a query varies.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const PAGES = '/api/v1/cms/pages/'

/** An id no page of the fake CMS has. */
function absentId(harness: Harness): number {
  const ids = new Set(harness.origin.pages().map((page) => page.id))
  let id = 987_654
  while (ids.has(id)) id++
  return id
}

/** Sums what cms-shield asked the CMS for over several side-by-side checks. */
async function cmsHitsOf(harness: Harness, urls: readonly string[]): Promise<number> {
  let hits = 0
  for (const url of urls) hits += (await expectSameAsCms(harness, url)).cmsHits
  return hits
}

/** A change the listing shows, synced: a new snapshot is swapped in. */
async function changeTheTree(harness: Harness): Promise<void> {
  const page = harness.origin.pages().at(-1)!
  harness.origin.updatePage(page.id, { title: `${page.title} (edited)` })
  const result = await harness.app.shield.sync.syncNow()
  expect(result.ok && result.changed).toBe(true)
}

describe('details of pages the tree does not hold', () => {
  it('answers a detail with fields for an id the tree does not hold with Wagtail\'s 404, asking the CMS nothing', async () => {
    h = await startShield()
    const id = absentId(h)
    h.origin.resetHits()
    const served = await h.get(`${PAGES}${id}/?fields=title`)
    expect(h.origin.hits.total).toBe(0)
    expect(served.status).toBe(404)
    expect(served.body).toBe('{\n    "message": "No Page matches the given query."\n}')
    expect(served.headers['content-type']).toBe('application/json')
    expect(served.headers['vary']).toBe('Accept')
    expect(served.headers['allow']).toBe('GET, HEAD, OPTIONS')
    expect(served.headers['etag']).toBeUndefined()
    // Kept in front for the negative TTL, until the page's creation purges its key.
    expect(served.headers['cache-control']).toBe('public, max-age=10')
    expect(served.headers['surrogate-key']).toBe(`cms-pages cms-page-${id}`)
    // And it is what the CMS answers.
    expect((await expectSameAsCms(h, `${PAGES}${id}/?fields=title`)).cmsHits).toBe(0)
  })

  it('answers every query Wagtail reads only after the lookup the same way for an absent id, naming the type\'s model', async () => {
    h = await startShield()
    const id = absentId(h)
    const pages = h.origin.pages()
    const parent = pages.find((page) => pages.some((child) => child.parentId === page.id && child.parentId !== null && page.parentId !== null))!
    const notAChild = pages.find((page) => page.parentId !== parent.id && page.id !== parent.id)!
    const hits = await cmsHitsOf(h, [
      `${PAGES}${id}/?fields=*`,
      `${PAGES}${id}/?fields=_,id,parent&limit=abc&foo=bar`,
      `${PAGES}${id}/?type=cms.GenericPage&fields=title`,
      `${PAGES}${id}/?first_published_at=2024-01-02&fields=title`,
      `${PAGES}${id}/?alias_of=3`,
      `${PAGES}${id}/?order=-title&fields=title`,
      `${PAGES}${id}/?order=random`,
      `${PAGES}${notAChild.id}/?child_of=${parent.id}&fields=title`,
      `${PAGES}${id}/?fields=title&child_of=abc`,
      `${PAGES}${id}/?fields=title&descendant_of=${id}`,
    ])
    expect(hits).toBe(0)
  })

  it('still asks the CMS what only it decides before the lookup, or for a page the tree holds', async () => {
    h = await startShield()
    const id = absentId(h)
    const present = h.origin.pages()[1]!.id
    for (const url of [`${PAGES}${id}/?order=foo&fields=title`, `${PAGES}${id}/?locale=xx&fields=title`, `${PAGES}${present}/?fields=locale(x)`]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
    }
  })
})

describe('types the CMS said do not exist', () => {
  it('answers unknown-type variants as the CMS does, at one CMS request for them all', async () => {
    h = await startShield()
    const id = h.origin.pages()[1]!.id
    const hits = await cmsHitsOf(h, [
      `${PAGES}?type=cms.Nope&limit=1`,
      `${PAGES}?type=cms.Nope&limit=2`,
      `${PAGES}?type=cms.Nope&fields=x`,
      `${PAGES}?type=cms.NOPE&foo=bar`,
      `${PAGES}?type=cms.GenericPage,cms.nope`,
      `${PAGES}${id}/?type=cms.Nope`,
      `${PAGES}${id}/?type=cms.Nope&fields=title`,
      `${PAGES}find/?type=cms.Nope&html_path=/`,
      `${PAGES}find/?type=cms.Nope&id=${id}`,
    ])
    expect(hits).toBe(1)
    // Content negotiation still comes first.
    expect((await expectSameAsCms(h, `${PAGES}?type=cms.Nope&format=xml`)).status).toBe(404)
  })

  it('answers locally even the very query that taught it, once its cached answer has expired', async () => {
    let clock = 1_700_000_000_000
    h = await startShield({ env: { CACHE_NEGATIVE_TTL: '5s', CACHE_STALE_WHILE_REVALIDATE: '0s', CACHE_TTL_JITTER_PERCENT: '0' }, deps: { now: () => clock, random: () => 0 } })
    const url = `${PAGES}?type=cms.Nope&limit=1`
    expect((await expectSameAsCms(h, url)).cmsHits).toBe(1)
    clock += 60_000
    expect((await expectSameAsCms(h, url)).cmsHits).toBe(0)
  })

  it('forgets them when a new snapshot is swapped in', async () => {
    h = await startShield()
    expect((await expectSameAsCms(h, `${PAGES}?type=cms.Nope&limit=1`)).cmsHits).toBe(1)
    expect((await expectSameAsCms(h, `${PAGES}?type=cms.Nope&limit=3`)).cmsHits).toBe(0)
    await changeTheTree(h)
    expect((await expectSameAsCms(h, `${PAGES}?type=cms.Nope&limit=4`)).cmsHits).toBe(1)
  })
})

describe('find paths the CMS said give no page', () => {
  it('answers 300 finds of the same unknown path with varying other parameters at one CMS request', async () => {
    h = await startShield()
    const first = await expectSameAsCms(h, `${PAGES}find/?html_path=/no/such/page/`)
    expect([first.status, first.cmsHits]).toEqual([404, 1])
    const before = h.origin.hits.total
    for (let i = 0; i < 300; i++) {
      const served = await h.get(`${PAGES}find/?html_path=no/such//page&fields=_,id&foo=${i}`)
      expect(served.status).toBe(404)
      expect(served.body).toBe('{\n    "message": "not found"\n}')
    }
    expect(h.origin.hits.total - before).toBe(0)
  })

  it('answers them as the CMS does, asking again only where an id the queryset holds could still decide', async () => {
    h = await startShield()
    const pages = h.origin.pages()
    const absent = absentId(h)
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/no/such/`)).cmsHits).toBe(1)
    expect(await cmsHitsOf(h, [
      `${PAGES}find/?html_path=no/such&id=${absent}`,
      `${PAGES}find/?html_path=/no/such/&id=abc`,
      `${PAGES}find/?html_path=//no//such&format=json`,
    ])).toBe(0)
    // The path might route to a page outside the queryset, and then the id decides: only the CMS knows.
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/no/such/&id=${pages[1]!.id}`)).cmsHits).toBe(1)
    // Another type chooses another queryset.
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/no/such/&type=cms.GenericPage`)).cmsHits).toBe(1)
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/no/such/&type=cms.genericpage&fields=x`)).cmsHits).toBe(0)
  })

  it('forgets them when a new snapshot is swapped in: a page published there is found, another path is asked again', async () => {
    h = await startShield()
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/now-there/`)).cmsHits).toBe(1)
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/still-not-there/`)).cmsHits).toBe(1)
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/still-not-there/&foo=1`)).cmsHits).toBe(0)
    const pages = h.origin.pages()
    const root = pages.find((page) => page.parentId === null)!
    const template = pages.find((page) => page.parentId === root.id)!
    h.origin.addPage({ ...template, id: 990_700, parentId: root.id, slug: 'now-there', title: 'Now there' })
    const result = await h.app.shield.sync.syncNow()
    expect(result.ok && result.changed).toBe(true)
    const found = await expectSameAsCms(h, `${PAGES}find/?html_path=/now-there/`)
    expect([found.status, found.cmsHits]).toEqual([302, 0])
    expect((await expectSameAsCms(h, `${PAGES}find/?html_path=/still-not-there/&foo=2`)).cmsHits).toBe(1)
  })
})
