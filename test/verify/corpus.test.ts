import { describe, expect, it } from 'vitest'
import { API_PATH, buildCorpus, enc, LISTING_KEYS } from '../../scripts/verify/corpus.js'
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

describe('enc', () => {
  it('percent-encodes UTF-8 and leaves what the fields syntax needs readable', () => {
    expect(enc('a b&c=ü')).toBe('a%20b%26c%3D%C3%BC')
    expect(enc('title,-id,parent(*)')).toBe('title,-id,parent(*)')
  })
})
