/**
 * A website's build (issue 35): every query of the `frontend` benchmark's mix, derived from the
 * site, answered from the snapshot byte for byte as the CMS answers it, with no CMS request and so
 * no 429 under the default per-client share; in one language, and in two with `&locale=`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { buildQueries, type SiteStructure } from '../../bench/lib/frontend-mix.js'
import { generateSite, type FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

/** cms-shield's own defaults for the read-through budget (the harness otherwise lifts them). */
const DEFAULT_BUDGET = {
  READ_THROUGH_RATE: '10', READ_THROUGH_BURST: '20', READ_THROUGH_CONCURRENCY: '4',
  READ_THROUGH_CLIENT_RATE: '2', READ_THROUGH_CLIENT_BURST: '10', READ_THROUGH_QUEUE_TIMEOUT: '500ms',
}

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

/** The site with a German copy of every page, published a day after its original. */
function bilingual(english: FakePage[]): FakePage[] {
  return [...english, ...english.map((page): FakePage => ({
    ...page,
    id: page.id + 10_000,
    parentId: page.parentId === null ? null : page.parentId + 10_000,
    ...(page.aliasOf == null ? {} : { aliasOf: page.aliasOf + 10_000 }),
    slug: page.parentId === null ? `${page.slug}-de` : page.slug,
    title: `${page.title} (de)`,
    firstPublishedAt: page.firstPublishedAt === null ? null : new Date(Date.parse(page.firstPublishedAt) + 86_400_000).toISOString().replace('.000Z', 'Z'),
    locale: 'de',
    translationKey: `page-${page.id}`,
  }))]
}

const structureOf = (pages: readonly FakePage[], limitMax: number): SiteStructure => ({
  limitMax,
  pages: pages.filter((page) => page.live !== false).map((page) => ({ id: page.id, type: page.type, parentId: page.parentId, locale: page.locale ?? 'en' })),
})

async function build(queries: readonly string[]): Promise<void> {
  for (const url of queries) {
    const compared = await expectSameAsCms(h!, url)
    expect(compared.status, url).toBe(200)
    expect(compared.cmsHits, url).toBe(0)
  }
}

describe("a site build's queries", () => {
  it('are answered from the snapshot, exactly, at no CMS cost, on a CMS without i18n', async () => {
    const pages = generateSite({ pages: 120, seed: 11 })
    h = await startShield({ origin: { pages, limitMax: 30 }, env: DEFAULT_BUDGET })
    const queries = buildQueries(structureOf(pages, 30), '/api/v1/cms/pages/')
    expect(queries.some((query) => query.includes('&offset=30'))).toBe(true)
    await build(queries)
  })

  it('are answered from the snapshot, exactly, at no CMS cost, in each language of a CMS with i18n', async () => {
    const pages = bilingual(generateSite({ pages: 60, seed: 12, timeZone: 'UTC' }))
    h = await startShield({ origin: { pages, i18n: true, locales: ['en', 'de'] }, env: DEFAULT_BUDGET })
    const structure = structureOf(pages, 250)
    await build([...buildQueries(structure, '/api/v1/cms/pages/'), ...buildQueries(structure, '/api/v1/cms/pages/', 'de')])
  })
})
