/**
 * `?fields=` on a detail is answered from the stored detail: it holds every field of the page's
 * type, in the serializer's order, so a selection is the members it keeps. `locale`, which a CMS
 * without i18n leaves out of details, comes from the one language the listing pass saw every page
 * have. What neither shows (`locale` when pages differ in it, sub-fields beyond a nested page's
 * defaults, sub-fields of other fields) goes to the CMS.
 */
import fc from 'fast-check'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { generateSite, probeTree } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

describe('fields on a detail, from the snapshot', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startShield({ origin: { pages: probeTree(), limitMax: 20 } })
  })
  afterAll(async () => h.close())

  const LOCAL = [
    '_', 'title', '-title', '_,title', '_,id', '-id', 'title,slug', '-detail_url,-html_url', '_,type,date', '-parent,-alias_of',
    'alias_of(title)', 'alias_of(_,id)', 'alias_of(-html_url,-detail_url)', '_,alias_of(_,title)', 'body,intro', '-intro,-body,-date',
    // alias_of's sub-fields are checked, then ignored: the nested page comes with its default fields.
    'alias_of(*)', 'alias_of(slug)', '_,alias_of(locale,-title)',
    // Sub-fields of a field that is no relation: Wagtail's one error, when no other can come first.
    'parent(title)', 'title(x)', '_,id(x),alias_of(title)', 'nope(x)',
    'nope', 'zz,nope,title', 'x y', 'title,', '*,title', '_,-title', 'a(b', 'meta',
    // A CMS without i18n leaves `locale` out of details; the listing pass learned every page's.
    '*', 'locale', '_,locale', '*,-parent', '-title,locale',
  ]

  it.each(LOCAL)('answers fields=%s like the CMS, with no CMS request', async (fields) => {
    for (const id of [4, 8, 3]) {
      const url = `/api/v1/cms/pages/${id}/?fields=${encodeURIComponent(fields)}`
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it.each(['alias_of(nope)', 'alias_of(title(x))', 'alias_of(parent)', 'locale(x)', 'title(x),slug(y)', 'title(x),-title'])('asks the CMS for fields=%s, which the stored detail cannot show', async (fields) => {
    const url = `/api/v1/cms/pages/8/?fields=${encodeURIComponent(fields)}`
    expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
  })

  it('answers a detail that does not exist 404 whatever its fields, as Wagtail looks the page up first', async () => {
    for (const fields of ['x y', 'nope', 'locale']) {
      const compared = await expectSameAsCms(h, `/api/v1/cms/pages/999/?fields=${encodeURIComponent(fields)}`)
      expect(compared.status).toBe(404)
      expect(compared.cmsHits).toBe(0)
    }
  })
})

describe('fields on a detail, any spelling (fast-check against the fake CMS)', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 30, seed: 9 }) } })
  })
  afterAll(async () => h.close())

  it('answers exactly as the CMS does, asking it at most once per query', async () => {
    const ids = h.origin.pages().filter((page) => page.live !== false).map((page) => page.id)
    const names = ['id', 'title', 'slug', 'type', 'detail_url', 'html_url', 'seo_title', 'show_in_menus', 'search_description',
      'first_published_at', 'alias_of', 'parent', 'locale', 'nope', ...new Set(h.origin.pages().flatMap((page) => Object.keys(page.extra ?? {})))]
    const field = fc.tuple(fc.boolean(), fc.constantFrom(...names)).map(([negated, name]) => `${negated ? '-' : ''}${name}`)
    const fields = fc.tuple(fc.constantFrom('', '*,', '_,'), fc.array(field, { maxLength: 4 })).map(([head, rest]) => `${head}${rest.join(',')}`.replace(/,$/, ''))
    await fc.assert(fc.asyncProperty(fc.constantFrom(...ids), fields, async (id, spelled) => {
      const url = `/api/v1/cms/pages/${id}/?fields=${encodeURIComponent(spelled)}`
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBeLessThanOrEqual(1)
    }), { numRuns: 150 })
  })
})

describe('fields on a listing, from the snapshot', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startShield({ origin: { pages: probeTree(), limitMax: 20 } })
  })
  afterAll(async () => h.close())

  it.each([
    '_', 'title', '-title', '_,title', '_,id', '-id', 'title,slug', '-detail_url,-html_url', 'show_in_menus,seo_title,search_description',
    'alias_of', 'alias_of(title)', '_,alias_of(_,id)', '_,alias_of(slug)', 'title(x)', 'parent(x)', 'html_url', '_,html_url,id', 'nope', 'parent', 'x y', 'title,', 'date',
    '*', 'locale', '_,locale', '*,-locale,-title',
  ])('answers fields=%s on listings, typed or not, like the CMS, with no CMS request', async (fields) => {
    for (const query of ['', '&type=home.BlogPage', '&child_of=3', '&type=home.BlogPage&limit=1&offset=1', '&limit=abc']) {
      const url = `/api/v1/cms/pages/?fields=${encodeURIComponent(fields)}${query}`
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it.each(['alias_of(nope)', 'title(x),slug(y)'])('asks the CMS for fields=%s on a listing, which the stored details cannot show', async (fields) => {
    const url = `/api/v1/cms/pages/?type=home.BlogPage&fields=${encodeURIComponent(fields)}`
    expect((await expectSameAsCms(h, url)).cmsHits, url).toBeLessThanOrEqual(1)
  })
})

describe('fields on a listing, any spelling (fast-check against the fake CMS)', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 30, seed: 9 }) } })
  })
  afterAll(async () => h.close())

  it('answers exactly as the CMS does, asking it at most once per query', async () => {
    const types = [...new Set(h.origin.pages().map((page) => page.type))]
    const names = ['id', 'title', 'slug', 'type', 'detail_url', 'html_url', 'seo_title', 'show_in_menus', 'search_description',
      'first_published_at', 'alias_of', 'parent', 'locale', 'nope', ...new Set(h.origin.pages().flatMap((page) => Object.keys(page.extra ?? {})))]
    const field = fc.tuple(fc.boolean(), fc.constantFrom(...names)).map(([negated, name]) => `${negated ? '-' : ''}${name}`)
    const fields = fc.tuple(fc.constantFrom('', '*,', '_,'), fc.array(field, { maxLength: 4 })).map(([head, rest]) => `${head}${rest.join(',')}`.replace(/,$/, ''))
    const typed = fc.option(fc.constantFrom(...types), { nil: undefined })
    await fc.assert(fc.asyncProperty(fields, typed, fc.integer({ min: 1, max: 5 }), async (spelled, type, limit) => {
      const url = `/api/v1/cms/pages/?fields=${encodeURIComponent(spelled)}&limit=${limit}${type === undefined ? '' : `&type=${type}`}`
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBeLessThanOrEqual(1)
    }), { numRuns: 150 })
  })
})

describe('locale without i18n, when the pages differ in it', () => {
  let h: Harness
  beforeAll(async () => {
    // Pages of another Locale under the default Site's root: what a site that once had i18n keeps.
    const pages = probeTree().map((page) => (page.id === 5 ? { ...page, locale: 'de' } : page))
    h = await startShield({ origin: { pages, limitMax: 20 } })
  })
  afterAll(async () => h.close())

  it('asks the CMS for fields that show locale, and answers the rest from the snapshot', async () => {
    for (const url of ['/api/v1/cms/pages/4/?fields=*', '/api/v1/cms/pages/?fields=_,locale', '/api/v1/cms/pages/?type=home.BlogPage&fields=*']) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
    }
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/4/?fields=_,title')).cmsHits).toBe(0)
  })
})

describe('locale without i18n, as the pages change', () => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('stops answering locale from memory once a refreshed page shows another language, and starts again once they agree', async () => {
    h = await startShield({ origin: { pages: probeTree(), limitMax: 20 } })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/5/?fields=*')).cmsHits).toBe(0)
    h.origin.updatePage(5, { locale: 'de', title: 'Alpha (de)' })
    h.app.shield.sync.refresh({ ids: [5], reason: 'test' })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true })
    expect(h.app.shield.sync.current!.dialect.unlistedLocale).toBeUndefined()
    for (const id of [5, 4]) expect((await expectSameAsCms(h, `/api/v1/cms/pages/${id}/?fields=*`)).cmsHits).toBe(1)
    h.origin.updatePage(5, { locale: 'en' })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/5/?fields=locale')).cmsHits).toBe(0)
  })
})
