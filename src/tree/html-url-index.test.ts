import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { apiMount } from '../config/api-mount.js'
import { buildSnapshot, type SyncedPage } from './build-snapshot.js'
import { resolvePurgeTarget } from './html-url-index.js'
import { PageList } from './page-list.js'
import type { PageRecord, Snapshot } from './snapshot.js'

interface Spec {
  id: number
  parent: number | null
  slug: string
  htmlUrl: string | null
}

/** A listing item as the CMS writes it (depth 2 of a list envelope), `detail_url` already rewritten. */
function listItem(spec: Spec): string {
  const item = {
    id: spec.id,
    meta: {
      type: 'home.BlogPage',
      detail_url: `https://shield.example/api/v1/cms/pages/${spec.id}/`,
      html_url: spec.htmlUrl,
      slug: spec.slug,
      first_published_at: '2026-11-21T18:57:17.509378Z',
    },
    title: `Page ${spec.id}`,
  }
  return JSON.stringify(item, null, 4).replace(/\n/g, '\n        ')
}

function snapshotOf(specs: Spec[], version = 1): Snapshot {
  const pages: SyncedPage[] = specs.map((spec) => ({
    id: spec.id,
    type: 'home.BlogPage',
    title: `Page ${spec.id}`,
    slug: spec.slug,
    showInMenus: false,
    seoTitle: '',
    searchDescription: '',
    parentId: spec.parent,
    listItem: listItem(spec),
    detail: `{"id": ${spec.id}}`,
  }))
  return buildSnapshot(pages, { version, syncedAt: 0, dialect: { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' } })
}

/**
 * The probes' site on `localhost` (3 Home › 4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias), plus a
 * page with a non-ASCII slug, a second site on an explicit port, one on https, and the awkward cases.
 */
const SPECS: Spec[] = [
  { id: 3, parent: null, slug: 'homepage', htmlUrl: 'http://localhost/' },
  { id: 4, parent: 3, slug: 'blog-one', htmlUrl: 'http://localhost/blog-one/' },
  { id: 6, parent: 4, slug: 'child', htmlUrl: 'http://localhost/blog-one/child/' },
  { id: 5, parent: 3, slug: 'alpha', htmlUrl: 'http://localhost/alpha/' },
  { id: 8, parent: 3, slug: 'alpha-alias', htmlUrl: 'http://localhost/alpha-alias/' },
  // Django's reverse() percent-encodes non-ASCII slugs.
  { id: 9, parent: 3, slug: 'café', htmlUrl: 'http://localhost/caf%C3%A9/' },
  { id: 10, parent: 3, slug: 'about', htmlUrl: 'http://localhost/about/' },
  { id: 20, parent: 3, slug: 'site-two', htmlUrl: 'http://localhost:8000/' },
  { id: 21, parent: 20, slug: 'about', htmlUrl: 'http://localhost:8000/about/' },
  { id: 30, parent: 3, slug: 'secure', htmlUrl: 'https://secure.example/' },
  { id: 31, parent: 30, slug: 'news', htmlUrl: 'https://Secure.Example:443/news/' },
  // Not routable: Wagtail gives no html_url.
  { id: 40, parent: 3, slug: 'orphan', htmlUrl: null },
  // Two pages claiming one URL (a misconfigured pair of sites): neither can be told apart.
  { id: 50, parent: 3, slug: 'twin-a', htmlUrl: 'http://twins.example/twin/' },
  { id: 51, parent: 3, slug: 'twin-b', htmlUrl: 'http://twins.example/twin/' },
  // A site without a hostname: a relative html_url.
  { id: 60, parent: 3, slug: 'relative', htmlUrl: '/relative-only/' },
]
const tree = snapshotOf(SPECS)

const page = (id: number) => ({ kind: 'page', id })
const LISTING = { kind: 'listing' }
const UNKNOWN = { kind: 'unknown' }

describe('resolvePurgeTarget: API paths (WAGTAILAPI_USE_FRONTENDCACHE)', () => {
  it('reads the pages route and the other endpoints from the mount', () => {
    const mount = apiMount('/api/v2/', 'pages', ['images', 'documents'])
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v2/pages/4/', mount)).toEqual(page(4))
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v2/pages/', mount)).toEqual(LISTING)
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v2/images/7/', mount)).toEqual({ kind: 'endpoint', endpoint: 'images' })
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v2/documents/?tags=a', mount)).toEqual({ kind: 'endpoint', endpoint: 'documents' })
    // The default mount's paths are nobody's under another.
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v1/cms/pages/4/', mount)).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'api.example.com', '/api/v2/videos/1/', mount)).toEqual(UNKNOWN)
  })

  it('reads the page id from a detail URL on any host, whether or not the page is in the snapshot', () => {
    expect(resolvePurgeTarget(tree, 'api.example.com:8443', '/api/v1/cms/pages/4/')).toEqual(page(4))
    expect(resolvePurgeTarget(tree, 'localhost', '/api/v1/cms/pages/999/')).toEqual(page(999))
    expect(resolvePurgeTarget(tree, undefined, '/api/v1/cms/pages/6/?fields=title#x')).toEqual(page(6))
  })

  it('reads detail ids before the first snapshot exists', () => {
    expect(resolvePurgeTarget(undefined, 'localhost', '/api/v1/cms/pages/4/')).toEqual(page(4))
  })

  it('accepts leading zeros and percent-encoded digits, as Django routes them', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/api/v1/cms/pages/0004/')).toEqual(page(4))
    expect(resolvePurgeTarget(tree, 'localhost', '/api/v1/cms/pages/%34/')).toEqual(page(4))
    expect(resolvePurgeTarget(tree, 'localhost', `/api/v1/cms/pages/${'0'.repeat(40)}9007199254740991/`)).toEqual(page(Number.MAX_SAFE_INTEGER))
  })

  it('answers unknown for ids no page can have (beyond 2^53 − 1, or 0)', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/api/v1/cms/pages/9007199254740992/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'localhost', `/api/v1/cms/pages/${'9'.repeat(400)}/`)).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'localhost', '/api/v1/cms/pages/0/')).toEqual(UNKNOWN)
  })

  it('maps the listing, find/ and every other path under the API to the listing', () => {
    for (const path of ['/api/v1/cms/pages/', '/api/v1/cms/pages/?type=home.BlogPage', '/api/v1/cms/pages/find/?html_path=/', '/api/v1/cms/pages', '/api/v1/cms/pages/4', '/api/v1/cms/pages/x/']) {
      expect(resolvePurgeTarget(tree, 'localhost', path), path).toEqual(LISTING)
      expect(resolvePurgeTarget(undefined, 'localhost', path), path).toEqual(LISTING)
    }
  })
})

describe('resolvePurgeTarget: page URLs (html_url)', () => {
  it('matches Host plus path against html_url, ignoring query, fragment and Host case', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/')).toEqual(page(3))
    expect(resolvePurgeTarget(tree, 'localhost', '/blog-one/')).toEqual(page(4))
    expect(resolvePurgeTarget(tree, 'LocalHost', '/blog-one/child/?utm=1#top')).toEqual(page(6))
    expect(resolvePurgeTarget(tree, 'localhost', '/alpha-alias/')).toEqual(page(8))
  })

  it('tells sites apart by the explicit port Wagtail keeps in Host', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/about/')).toEqual(page(10))
    expect(resolvePurgeTarget(tree, 'localhost:8000', '/about/')).toEqual(page(21))
    expect(resolvePurgeTarget(tree, 'localhost:8000', '/')).toEqual(page(20))
  })

  it('matches a URL whose default port is written out, either way round', () => {
    expect(resolvePurgeTarget(tree, 'secure.example', '/news/')).toEqual(page(31))
    expect(resolvePurgeTarget(tree, 'secure.example:443', '/news/')).toEqual(page(31))
    expect(resolvePurgeTarget(tree, 'localhost:80', '/blog-one/')).toEqual(page(4))
  })

  it('compares paths after decoding percent-escapes', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/caf%C3%A9/')).toEqual(page(9))
    expect(resolvePurgeTarget(tree, 'localhost', '/caf%c3%a9/')).toEqual(page(9))
    expect(resolvePurgeTarget(tree, 'localhost', '/café/')).toEqual(page(9))
    expect(resolvePurgeTarget(tree, 'localhost', '/blog%2Done/')).toEqual(page(4))
  })

  it('does not throw on escapes that are not UTF-8', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/caf%E9/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'localhost', '/%zz/%')).toEqual(UNKNOWN)
  })

  it('falls back to the path alone when the Host matches no page but exactly one page has that path', () => {
    expect(resolvePurgeTarget(tree, 'cdn.example', '/blog-one/')).toEqual(page(4))
    expect(resolvePurgeTarget(tree, undefined, '/blog-one/child/')).toEqual(page(6))
    expect(resolvePurgeTarget(tree, 'cdn.example', '/relative-only/')).toEqual(page(60))
  })

  it('answers unknown when the path alone is shared by several pages', () => {
    expect(resolvePurgeTarget(tree, 'cdn.example', '/about/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'cdn.example', '/')).toEqual(UNKNOWN)
  })

  it('answers unknown when two pages claim the same URL', () => {
    expect(resolvePurgeTarget(tree, 'twins.example', '/twin/')).toEqual(UNKNOWN)
  })

  it('answers unknown for paths no page has, asterisk-form targets, and any page URL before the first snapshot', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/no-such-page/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'localhost', '/blog-one')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(tree, 'localhost', '*')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(undefined, 'localhost', '/blog-one/')).toEqual(UNKNOWN)
  })

  it('never matches a page whose html_url is null', () => {
    expect(resolvePurgeTarget(tree, 'localhost', '/orphan/')).toEqual(UNKNOWN)
  })

  it('takes the host from an absolute-form target instead of the Host header (RFC 9112 §3.2.2)', () => {
    expect(resolvePurgeTarget(tree, 'localhost', 'http://localhost:8000/about/?x=1')).toEqual(page(21))
    expect(resolvePurgeTarget(tree, 'elsewhere', 'https://secure.example/news/')).toEqual(page(31))
    expect(resolvePurgeTarget(tree, 'localhost', 'http://api.example.com/api/v1/cms/pages/4/')).toEqual(page(4))
  })
})

describe('resolvePurgeTarget: the html_url map', () => {
  /** A copy of `snapshot` whose records count how often their listing item is read. */
  function counting(snapshot: Snapshot): { snapshot: Snapshot; reads: () => number } {
    let reads = 0
    const pages = PageList.of(snapshot.pages.slice().map((record): PageRecord => {
      const copy = { ...record }
      Object.defineProperty(copy, 'listItem', { get: () => (reads++, record.listItem) })
      return copy
    }))
    return { snapshot: { ...snapshot, pages }, reads: () => reads }
  }

  it('is built once per snapshot, on the first page URL, and never for API paths', () => {
    const { snapshot, reads } = counting(tree)
    resolvePurgeTarget(snapshot, 'localhost', '/api/v1/cms/pages/4/')
    expect(reads()).toBe(0)
    expect(resolvePurgeTarget(snapshot, 'localhost', '/blog-one/')).toEqual(page(4))
    expect(resolvePurgeTarget(snapshot, 'localhost', '/alpha/')).toEqual(page(5))
    expect(resolvePurgeTarget(snapshot, 'localhost', '/nothing/')).toEqual(UNKNOWN)
    expect(reads()).toBe(tree.pages.length)
  })

  it('follows each new snapshot: a moved page is found at its new URL', () => {
    const moved = snapshotOf(SPECS.map((spec) => (spec.id === 6 ? { ...spec, htmlUrl: 'http://localhost/alpha/child/' } : spec)), 2)
    expect(resolvePurgeTarget(tree, 'localhost', '/alpha/child/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(moved, 'localhost', '/alpha/child/')).toEqual(page(6))
    expect(resolvePurgeTarget(moved, 'localhost', '/blog-one/child/')).toEqual(UNKNOWN)
  })

  it('skips listing items that are not JSON or carry no html_url', () => {
    const odd: Snapshot = {
      ...tree,
      pages: PageList.of(tree.pages.slice().map((record) => (record.id === 4 ? { ...record, listItem: '{"meta": {"html_url": ' } : record.id === 5 ? { ...record, listItem: '{"id": 5}' } : record))),
    }
    expect(resolvePurgeTarget(odd, 'localhost', '/blog-one/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(odd, 'localhost', '/alpha/')).toEqual(UNKNOWN)
    expect(resolvePurgeTarget(odd, 'localhost', '/blog-one/child/')).toEqual(page(6))
  })
})

describe('resolvePurgeTarget: properties', () => {
  const anyHost = fc.option(fc.oneof(fc.string({ unit: 'binary' }), fc.webAuthority({ withPort: true }), fc.constantFrom('localhost', 'LOCALHOST:8000', '[::1]:80', 'a@b', 'x/y')), { nil: undefined })
  const anyTarget = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'binary' }).map((text) => `/${text}`),
    fc.webPath(),
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
    fc.stringMatching(/^\/api\/v1\/cms\/pages\/[0-9%a-fA-F]{0,30}\/?[?#]?.{0,5}$/),
  )

  it('never throws, whatever the Host and request-target, and always answers a known kind', () => {
    fc.assert(
      fc.property(fc.option(fc.constant(tree), { nil: undefined }), anyHost, anyTarget, (snapshot, host, target) => {
        const result = resolvePurgeTarget(snapshot, host, target)
        expect(['page', 'listing', 'endpoint', 'unknown']).toContain(result.kind)
        if (result.kind === 'page') expect(Number.isSafeInteger(result.id) && result.id > 0).toBe(true)
      }),
      { numRuns: 2000 },
    )
  })

  it('reads any safe page id, with any leading zeros, from an API detail path', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.nat(5), anyHost, (id, zeros, host) => {
        expect(resolvePurgeTarget(tree, host, `/api/v1/cms/pages/${'0'.repeat(zeros)}${id}/`)).toEqual(page(id))
      }),
    )
  })

  it('finds every page with a unique html_url from the Host and path Wagtail would send', () => {
    const unique = tree.pages.slice().filter((record) => [3, 4, 5, 6, 8, 9, 10, 20, 21, 30, 31].includes(record.id))
    fc.assert(
      fc.property(fc.constantFrom(...unique), fc.webQueryParameters(), (record, query) => {
        const htmlUrl = new URL(SPECS.find((spec) => spec.id === record.id)!.htmlUrl!)
        // The WHATWG host drops a default port; Wagtail's explicit `:443` form is covered above.
        expect(resolvePurgeTarget(tree, htmlUrl.host, `${htmlUrl.pathname}?${query}`)).toEqual(page(record.id))
      }),
    )
  })
})
