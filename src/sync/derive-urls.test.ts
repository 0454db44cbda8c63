import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PageModelRegistry } from '../../test/fake-wagtail/page-models.js'
import { buildSiteIndex } from '../../test/fake-wagtail/site-index.js'
import type { FakePage } from '../../test/fake-wagtail/types.js'
import { childUrl, deriveUrls, learnAnchors, MAX_ANCHORS, quoteSlug, type UrlPlace } from './derive-urls.js'

const place = (id: number, slug: string, parentId: number | null): UrlPlace => ({ id, slug, parentId })

describe('deriveUrls', () => {
  it('gives a page its parent\'s URL followed by its slug, and an anchor its own', () => {
    const pages = [place(2, 'home', null), place(3, 'blog', 2), place(4, 'post', 3), place(5, 'about', 2)]
    const urls = deriveUrls(pages, new Map([[2, 'http://site/']]))
    expect([...urls]).toEqual([[2, 'http://site/'], [3, 'http://site/blog/'], [4, 'http://site/blog/post/'], [5, 'http://site/about/']])
  })

  it('gives no URL below a page without one, and leaves a page unplaced whose parent is unknown', () => {
    const pages = [place(2, 'home', null), place(3, 'blog', 2), place(7, 'orphan', null), place(8, 'below', 7), place(9, 'lost', 99)]
    const urls = deriveUrls(pages, new Map([[2, null]]))
    expect(urls.get(3)).toBeNull()
    expect(urls.get(7)).toBeUndefined()
    expect(urls.get(8)).toBeUndefined()
    expect(urls.get(9)).toBeUndefined()
  })

  it('quotes a slug as Django reverse() does', () => {
    expect(quoteSlug('blog-one_2.x~')).toBe('blog-one_2.x~')
    expect(quoteSlug('über uns')).toBe('%C3%BCber%20uns')
    expect(quoteSlug("a:b@c$d&e+f,g;h=i!j'k(l)m*")).toBe("a:b@c$d&e+f,g;h=i!j'k(l)m*")
    expect(childUrl('http://site/', 'a?b#c')).toBe('http://site/a%3Fb%23c/')
  })
})

describe('learnAnchors', () => {
  it('keeps the pages whose URL does not follow from their parent\'s', () => {
    const pages = [
      { ...place(2, 'home', null), htmlUrl: 'http://site/' },
      { ...place(3, 'blog', 2), htmlUrl: 'http://site/blog/' },
      { ...place(4, 'nested', 3), htmlUrl: 'https://other.example/' },
      { ...place(5, 'x', 4), htmlUrl: 'https://other.example/x/' },
    ]
    expect(learnAnchors(pages)).toEqual(new Map([[2, 'http://site/'], [4, 'https://other.example/']]))
  })

  it('learns nothing from a listing without URLs, or from a tree with too many anchors', () => {
    expect(learnAnchors([{ ...place(2, 'home', null), htmlUrl: undefined }])).toBeUndefined()
    const roots = Array.from({ length: MAX_ANCHORS + 1 }, (_, i) => ({ ...place(i + 1, 'r', null), htmlUrl: `http://site/${i}/` }))
    expect(learnAnchors(roots)).toBeUndefined()
  })
})

/** A random tree as the fake CMS holds it: translated roots, drafts and slugs that need quoting. */
const fakeTree = fc.array(
  fc.record({ parent: fc.nat(), slug: fc.constantFrom('home', 'blog', 'über', 'a b', 'x:y', 'news'), live: fc.boolean(), root: fc.boolean() }),
  { minLength: 1, maxLength: 40 },
).map((specs): FakePage[] => specs.map((spec, i): FakePage => ({
  id: i + 1,
  type: 'cms.GenericPage',
  title: `P${i + 1}`,
  slug: spec.slug,
  parentId: i === 0 || (spec.root && i % 7 === 0) ? null : (spec.parent % i) + 1,
  showInMenus: false,
  seoTitle: '',
  searchDescription: '',
  firstPublishedAt: null,
  live: i === 0 || spec.live || i % 3 !== 0,
  locale: i === 0 ? 'en' : `l${i}`,
})))

describe('deriveUrls over a tree the fake CMS serves', () => {
  it('gives every visible page the URL the CMS writes, from the anchors learned of it', () => {
    fc.assert(fc.property(fakeTree, fc.constantFrom('http://localhost', 'https://www.example.com:8443'), (pages, siteUrl) => {
      const models = new PageModelRegistry()
      for (const page of pages) models.observe(page)
      const index = buildSiteIndex(pages, models, { siteUrl, detailBase: siteUrl, apiPath: '/api/' })
      // As the sync sees it: the listing's pages, each with the parent its detail names (null when not visible).
      const listed = index.visible.map((node) => ({
        ...place(node.id, node.page.slug, node.parent?.live ? node.parent.id : null),
        htmlUrl: node.htmlUrl,
      }))
      const anchors = learnAnchors(listed)
      if (anchors === undefined) return
      for (const id of anchors.keys()) expect(listed.find((page) => page.id === id)!.parentId).toBeNull()
      const urls = deriveUrls(listed, anchors)
      for (const page of listed) expect(urls.get(page.id)).toBe(page.htmlUrl)
    }), { numRuns: 200 })
  })
})
