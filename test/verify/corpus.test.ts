import { describe, expect, it } from 'vitest'
import { API_PATH, apiPaths, buildCorpus, enc, LISTING_KEYS } from '../../scripts/verify/corpus.js'
import type { SiteModel } from '../../scripts/verify/types.js'

const site: SiteModel = {
  limitMax: 250,
  totalCount: 3,
  pages: [
    { id: 2, type: 'cms.HomePage', title: 'Home', slug: 'home', htmlPath: '/', firstPublishedAt: '2020-01-02T03:04:05Z', locale: 'en' },
    { id: 3, type: 'blog.BlogPage', title: 'Über uns', slug: 'uber-uns', htmlPath: '/über-uns/', firstPublishedAt: null, seoTitle: 'About' },
    { id: 40, type: 'blog.BlogPage', title: 'News', slug: 'news', htmlPath: '/news/', firstPublishedAt: '2021-05-06T07:08:09.123456+02:00' },
  ],
  types: [
    { name: 'cms.HomePage', count: 1, fields: ['title', 'intro', 'html_url'], filters: [['intro', 'Hello']], nested: [['hero', ['url', 'alt']]] },
    { name: 'blog.BlogPage', count: 2, fields: ['title', 'date'], filters: [], nested: [] },
  ],
  hosts: ['www.example.com', 'www.example.com:443'],
  locales: ['en', 'de'],
}

describe('buildCorpus', () => {
  it('gives the same corpus for the same seed, and another for another seed', () => {
    expect(buildCorpus(site, 42, 400)).toEqual(buildCorpus(site, 42, 400))
    expect(buildCorpus(site, 43, 400)).not.toEqual(buildCorpus(site, 42, 400))
    // A shorter run is the start of a longer one: the first requests of a seed stay the same.
    expect(buildCorpus(site, 42, 50)).toEqual(buildCorpus(site, 42, 400).slice(0, 50))
  })

  it('writes targets an HTTP request line can carry: printable ASCII on the pages API', () => {
    for (const request of buildCorpus(site, 1, 2000)) {
      expect(request.target, request.target).toMatch(/^[\x21-\x7e]+$/)
      expect(request.target.startsWith(API_PATH)).toBe(true)
      if (request.view === 'find') expect(request.target.startsWith(`${API_PATH}find/?`)).toBe(true)
      if (request.view === 'detail') expect(request.target).toMatch(/^\/api\/v1\/cms\/pages\/[0-9]+\//)
    }
  })

  it('covers every documented listing parameter, every view, method and Accept variant, and uses the types own fields', () => {
    const corpus = buildCorpus(site, 1, 2000)
    const keys = new Set(corpus.flatMap((request) => [...new URLSearchParams(request.target.split('?')[1] ?? '').keys()]))
    for (const key of [...LISTING_KEYS, 'html_path', 'intro']) expect(keys, key).toContain(key)
    expect(new Set(corpus.map((request) => request.view))).toEqual(new Set(['listing', 'detail', 'find']))
    expect(new Set(corpus.map((request) => request.method))).toEqual(new Set(['GET', 'HEAD', 'OPTIONS']))
    expect(new Set(corpus.map((request) => request.accept))).toEqual(new Set([undefined, 'application/json', '*/*', 'text/html', 'application/xml',
      'application/json; indent=2', 'text/html, application/json;q=0.9']))
    const targets = corpus.map((request) => request.target)
    expect(targets.some((t) => t.includes('fields=hero('))).toBe(true)
    expect(targets.some((t) => t.includes('order=random'))).toBe(true)
    expect(targets.some((t) => t.includes('/pages/0002/') || t.includes('/pages/0003/') || t.includes('/pages/00040/'))).toBe(true)
    expect(corpus.some((request) => request.target.includes('%00'))).toBe(true)
  })

  it('refuses a site with no pages', () => {
    expect(() => buildCorpus({ ...site, pages: [] }, 1, 10)).toThrow(/no pages/)
  })
})

const MEDIA = [
  { name: 'images', totalCount: 3, ids: [1, 4, 7], titles: ['Red square', 'Alpha logo', 'Ümlaut image'], tags: ['logo', 'red', 'square'] },
  { name: 'documents', totalCount: 2, ids: [2, 3], titles: ['Annual report', 'Prices'], tags: ['finance'] },
]
const queryOf = (target: string): URLSearchParams => new URLSearchParams(target.split('?')[1] ?? '')

describe('buildCorpus at another API path, with other endpoints', () => {
  const v2 = apiPaths('/api/v2/')

  it('puts every request under the given API path, the pages endpoint at <path>pages/', () => {
    expect(apiPaths('/api/v2')).toEqual({ api: '/api/v2/', pages: '/api/v2/pages/' })
    expect(apiPaths('/cms-api/', 'content').pages).toBe('/cms-api/content/')
    for (const request of buildCorpus(site, 1, 500, v2)) {
      expect(request.target.startsWith('/api/v2/pages/'), request.target).toBe(true)
      if (request.view === 'detail') expect(request.target).toMatch(/^\/api\/v2\/pages\/[0-9]+\//)
    }
  })

  it('leaves the pages corpus of a seed as it was when no endpoint is asked for', () => {
    expect(buildCorpus({ ...site, media: [] }, 9, 300)).toEqual(buildCorpus(site, 9, 300))
    expect(buildCorpus(site, 9, 300).some((request) => request.endpoint !== undefined)).toBe(false)
  })

  it('asks images and documents for listings with limit, offset, order, search, tags and fields, details, find and errors, from their own ids, titles and tags', () => {
    const corpus = buildCorpus({ ...site, media: MEDIA }, 1, 1500, v2)
    for (const endpoint of MEDIA) {
      const ours = corpus.filter((request) => request.endpoint === endpoint.name)
      expect(ours.every((request) => request.target.startsWith(`/api/v2/${endpoint.name}/`))).toBe(true)
      expect(ours.length).toBeGreaterThan(100)
      const listings = ours.filter((request) => request.view === 'listing').map((request) => queryOf(request.target))
      const keys = new Set(listings.flatMap((query) => [...query.keys()]))
      for (const key of ['limit', 'offset', 'order', 'search', 'tags', 'fields', 'title', 'foo']) expect(keys, `${endpoint.name} ${key}`).toContain(key)
      const values = (key: string) => new Set(listings.flatMap((query) => query.getAll(key)))
      for (const order of ['title', '-id', 'random']) expect(values('order'), order).toContain(order)
      for (const limit of ['abc', String(site.limitMax! + 1)]) expect(values('limit'), limit).toContain(limit)
      for (const tag of endpoint.tags) expect(values('tags'), tag).toContain(tag)
      expect([...values('title')].some((title) => endpoint.titles.includes(title))).toBe(true)
      const details = ours.filter((request) => request.view === 'detail').map((request) => Number(/\/(\d+)\/(\?|$)/.exec(request.target)?.[1]))
      expect(details.some((id) => endpoint.ids.includes(id)), 'a detail of an existing id').toBe(true)
      expect(details.some((id) => !endpoint.ids.includes(id)), 'a detail of an absent id').toBe(true)
      const finds = ours.filter((request) => request.view === 'find').map((request) => queryOf(request.target).get('id'))
      expect(finds.some((id) => endpoint.ids.map(String).includes(id ?? '')), 'find/?id= of an existing id').toBe(true)
      expect(new Set(ours.map((request) => request.method))).toEqual(new Set(['GET', 'HEAD', 'OPTIONS']))
    }
  })

  it('asks each discovered locale, and translation_of a page of each, when the pages carry meta.locale', () => {
    const bilingual = { ...site, pages: [...site.pages.map((p) => ({ ...p, locale: 'en' })), { ...site.pages[0]!, id: 50, title: 'Startseite', locale: 'de' }] }
    const corpus = buildCorpus(bilingual, 1, 100)
    const queries = corpus.map((request) => queryOf(request.target))
    for (const locale of ['en', 'de']) expect(queries.some((query) => query.get('locale') === locale && [...query.keys()].length === 1), locale).toBe(true)
    const translationOf = new Set(queries.map((query) => query.get('translation_of')).filter((id) => id !== null))
    expect(translationOf).toContain('50')
    expect([...translationOf].some((id) => ['2', '3', '40'].includes(id!))).toBe(true)
    expect(queries.some((query) => query.has('translation_of') && query.get('locale') === 'de')).toBe(true)
  })
})

describe('buildCorpus: fields and order', () => {
  const dated: SiteModel = {
    ...site,
    pages: [...site.pages.map((p) => ({ ...p, locale: 'en' })), { ...site.pages[2]!, id: 41, locale: 'de', firstPublishedAt: site.pages[2]!.firstPublishedAt }],
    types: [site.types[0]!, { ...site.types[1]!, dates: [{ name: 'date', values: [[3, '2024-01-01'], [40, '2024-01-02'], [41, '2024-01-02']] }] }],
  }
  const corpus = buildCorpus(dated, 1, 1000)
  const kinds = (prefix: string) => corpus.filter((request) => request.kind.startsWith(prefix))

  it('asks fields in every form on listings with and without type, on children and on details, and their errors', () => {
    const forms = new Set(kinds('fields: ').map((request) => request.kind))
    for (const form of ['names', '*', '_', '-name', '_,name', 'name(sub)', 'unknown']) {
      for (const view of ['listing', 'typed listing', 'detail']) expect(forms, `${form} · ${view}`).toContain(`fields: ${form} · ${view}`)
    }
    expect(forms).toContain('fields: detail-only · listing')
    expect(forms).toContain('fields: own names · typed listing')
    expect(forms).toContain('fields: own name(sub) · typed listing')
    const values = new Set(kinds('fields: ').map((request) => queryOf(request.target).get('fields')))
    for (const value of ['*', '_', '-title', '_,title', 'alias_of(title)', 'nope', 'parent', 'intro', '-intro', '_,intro']) expect(values, value).toContain(value)
    expect([...values].some((value) => value === '_,hero(url)' || value === '_,hero(alt)')).toBe(true)
  })

  it('asks order by id, publication and a type\'s own date field, where values are distinct and where two pages share one or one has none', () => {
    const forms = new Set(kinds('order: ').map((request) => request.kind))
    for (const form of ['id', '-id', 'first_published_at (empty)', '-first_published_at (empty)', 'first_published_at (distinct)', 'first_published_at (ties)',
      'own date date (distinct)', 'own date -date (ties)', '-first_published_at · detail', 'own date · detail']) {
      expect(forms, form).toContain(`order: ${form}`)
    }
    const typedDistinct = kinds('order: own date date (distinct)').map((request) => queryOf(request.target))
    expect(typedDistinct.every((query) => query.get('type') === 'blog.BlogPage')).toBe(true)
  })

  it('leaves the rest of a seed\'s corpus as it was: the same random requests after it', () => {
    const plain = buildCorpus(site, 5, 1500).filter((request) => !request.kind.startsWith('fields: ') && !request.kind.startsWith('order: '))
    const withDates = buildCorpus({ ...site, types: dated.types }, 5, 1500).filter((request) => !request.kind.startsWith('fields: ') && !request.kind.startsWith('order: '))
    expect(withDates.slice(0, 800).map((request) => request.target)).toEqual(plain.slice(0, 800).map((request) => request.target))
  })
})

describe('enc', () => {
  it('percent-encodes UTF-8 and leaves what the fields syntax needs readable', () => {
    expect(enc('a b&c=ü')).toBe('a%20b%26c%3D%C3%BC')
    expect(enc('title,-id,parent(*)')).toBe('title,-id,parent(*)')
  })
})
