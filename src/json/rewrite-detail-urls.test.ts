import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { getPath, parseJsonSpans, toPlain, type JsonNode } from './json-spans.js'
import {
  createUrlRewriter,
  findDetailUrlEdits,
  rewriteDetailUrls,
  rewriteDetailUrlsWithSpans,
  type RewriteUrl,
} from './rewrite-detail-urls.js'

const CMS = 'http://cms.internal:8000'
const PROXY = 'https://proxy.example.com'

/**
 * A Wagtail-shaped detail body, pretty-printed as DRF does, with the URLs as parameters so the
 * expected output is the same template: every byte outside the URLs must come out identical.
 */
function detailBody(u: { self: string; parent: string; grandparent: string; alias: string; fk: string }): string {
  return `{
    "id": 12,
    "meta": {
        "type": "blog.BlogPage",
        "detail_url": "${u.self}",
        "html_url": "${CMS}/blog/post/",
        "slug": "post",
        "show_in_menus": false,
        "seo_title": "",
        "search_description": "",
        "first_published_at": "2024-01-01T00:00:00Z",
        "alias_of": {
            "id": 3,
            "meta": {
                "type": "blog.BlogPage",
                "detail_url": "${u.alias}",
                "html_url": "${CMS}/blog/original/"
            },
            "title": "Original"
        },
        "locale": "en",
        "parent": {
            "id": 5,
            "meta": {
                "type": "blog.BlogIndex",
                "detail_url": "${u.parent}",
                "html_url": null,
                "parent": {
                    "id": 2,
                    "meta": {"type": "home.HomePage", "detail_url": "${u.grandparent}"}
                }
            },
            "title": "Blog"
        }
    },
    "title": "Caf\\u00e9 \u2014 post",
    "views": 12345678901234567890,
    "rating": 1.0,
    "by_year": {"2024": 3, "1999": 1, "b": 2, "a": 1},
    "author": {
        "id": 9,
        "meta": {"type": "people.Person", "detail_url": "${u.fk}"}
    },
    "body": [
        {
            "type": "link",
            "value": {"detail_url": "${CMS}/api/v1/cms/pages/77/", "meta": "${CMS}/api/v1/cms/pages/78/"},
            "id": "f3b1"
        }
    ]
}`
}

const upstreamUrls = {
  self: `${CMS}/api/v1/cms/pages/12/`,
  parent: `${CMS}/api/v1/cms/pages/5/`,
  grandparent: `${CMS}/api/v1/cms/pages/2/`,
  alias: `${CMS}/api/v1/cms/pages/3/`,
  fk: `${CMS}/api/v1/cms/people/9/`,
}

/** Every key of every object, in document order: the key order the client will see. */
function keyOrder(root: JsonNode): string[] {
  const keys: string[] = []
  const visit = (node: JsonNode): void => {
    if (node.kind === 'array') node.items.forEach(visit)
    else if (node.kind === 'object')
      for (const entry of node.entries) {
        keys.push(entry.key)
        visit(entry.value)
      }
  }
  visit(root)
  return keys
}

/** Drops the parts that `rewriteDetailUrlsWithSpans` changes in place, for comparing trees. */
function spansOf(node: JsonNode): unknown {
  return JSON.parse(JSON.stringify(node)) as unknown
}

describe('createUrlRewriter', () => {
  const atRoot = createUrlRewriter({ baseUrl: PROXY })
  const mounted = createUrlRewriter({ baseUrl: `${PROXY}/shield/`, upstreamPathPrefix: '/cms' })

  it.each([
    [`${CMS}/api/v1/cms/pages/3/`, `${PROXY}/api/v1/cms/pages/3/`],
    ['https://cms.example.com/api/v1/cms/pages/3/?fields=title&x=%20#top', `${PROXY}/api/v1/cms/pages/3/?fields=title&x=%20#top`],
    ['http://localhost/api/v1/cms/pages/3/', `${PROXY}/api/v1/cms/pages/3/`],
    ['http://[::1]:8080/api/v1/cms/pages/3/', `${PROXY}/api/v1/cms/pages/3/`],
    ['/api/v1/cms/pages/3/', `${PROXY}/api/v1/cms/pages/3/`],
    ['//cms.internal/api/v1/cms/pages/3/', `${PROXY}/api/v1/cms/pages/3/`],
    [`${CMS}/api/v1/cms/images/5/`, `${PROXY}/api/v1/cms/images/5/`],
    [`${CMS}/api/v1/cms/pages/%C3%A9/`, `${PROXY}/api/v1/cms/pages/%C3%A9/`],
    [`${CMS}/media/images/a.jpg`, undefined],
    [`${CMS}/api/v1/other/3/`, undefined],
    [`${CMS}/api/v1/cmsx/3/`, undefined],
    [`${CMS}/api/v1/cms`, undefined],
    [`${CMS}`, undefined],
    [`${CMS}?next=/api/v1/cms/pages/1/`, undefined],
    [`${CMS}/blog/#/api/v1/cms/pages/1/`, undefined],
    ['api/v1/cms/pages/3/', undefined],
    ['', undefined],
    ['mailto:someone@example.com', undefined],
  ])('at the root: %s → %s', (url, expected) => {
    expect(atRoot(url)).toBe(expected)
  })

  it.each([
    [`${CMS}/cms/api/v1/cms/pages/3/`, `${PROXY}/shield/api/v1/cms/pages/3/`],
    ['https://cms.example.com:8443/cms/api/v1/cms/pages/3/?a=1', `${PROXY}/shield/api/v1/cms/pages/3/?a=1`],
    ['/cms/api/v1/cms/pages/3/', `${PROXY}/shield/api/v1/cms/pages/3/`],
    // The prefix is stripped only when present.
    ['/api/v1/cms/pages/3/', `${PROXY}/shield/api/v1/cms/pages/3/`],
    // A prefix matches whole path segments only.
    ['/cmsx/api/v1/cms/pages/3/', undefined],
    ['/cms/media/x.jpg', undefined],
    ['/cms', undefined],
  ])('under a prefix, to a base URL with a path: %s → %s', (url, expected) => {
    expect(mounted(url)).toBe(expected)
  })

  it('normalises the prefix spelling', () => {
    const rewrite = createUrlRewriter({ baseUrl: 'http://p:81', upstreamPathPrefix: 'cms/' })
    expect(rewrite('/cms/api/v1/cms/pages/1/')).toBe('http://p:81/api/v1/cms/pages/1/')
  })

  it('accepts another API path', () => {
    const rewrite = createUrlRewriter({ baseUrl: PROXY, apiPath: '/api/v2/' })
    expect(rewrite(`${CMS}/api/v2/pages/1/`)).toBe(`${PROXY}/api/v2/pages/1/`)
    expect(rewrite(`${CMS}/api/v1/cms/pages/1/`)).toBeUndefined()
  })

  it('refuses a base URL that is not absolute or carries a query or fragment', () => {
    expect(() => createUrlRewriter({ baseUrl: 'proxy.example.com' })).toThrow(TypeError)
    expect(() => createUrlRewriter({ baseUrl: `${PROXY}/?a=1` })).toThrow(TypeError)
    expect(() => createUrlRewriter({ baseUrl: `${PROXY}/#x` })).toThrow(TypeError)
    expect(() => createUrlRewriter({ baseUrl: PROXY, apiPath: 'api/' })).toThrow(TypeError)
  })
})

describe('rewriteDetailUrls', () => {
  const rewrite = createUrlRewriter({ baseUrl: PROXY })

  it('rewrites every meta.detail_url of a detail body and leaves every other byte alone', () => {
    const input = detailBody(upstreamUrls)
    const expected = detailBody({
      self: `${PROXY}/api/v1/cms/pages/12/`,
      parent: `${PROXY}/api/v1/cms/pages/5/`,
      grandparent: `${PROXY}/api/v1/cms/pages/2/`,
      alias: `${PROXY}/api/v1/cms/pages/3/`,
      fk: `${PROXY}/api/v1/cms/people/9/`,
    })
    const result = rewriteDetailUrls(input, rewrite)
    expect(result.changed).toBe(5)
    expect(result.text).toBe(expected)
    // Still valid JSON, same key order, and the numbers JSON.parse would damage are intact.
    JSON.parse(result.text)
    expect(keyOrder(parseJsonSpans(result.text))).toEqual(keyOrder(parseJsonSpans(input)))
    expect(result.text).toContain('"views": 12345678901234567890,')
    expect(result.text).toContain('"rating": 1.0,')
    // The StreamField block's own detail_url (not under meta) and every html_url are untouched.
    expect(result.text).toContain(`{"detail_url": "${CMS}/api/v1/cms/pages/77/", "meta": "${CMS}/api/v1/cms/pages/78/"}`)
    expect(result.text).toContain(`"html_url": "${CMS}/blog/post/"`)
  })

  it('returns the same text when nothing matches', () => {
    const input = '{"meta": {"detail_url": "http://cms/media/x.jpg"}, "detail_url": "http://cms/api/v1/cms/pages/1/"}'
    expect(rewriteDetailUrls(input, rewrite)).toEqual({ text: input, changed: 0 })
  })

  it('decodes escaped URLs and writes the replacement in DRF encoding', () => {
    const input = '{"meta": {"detail_url": "http:\\/\\/cms\\/api\\/v1\\/cms\\/pages\\/1\\/?q=\\u2028"}}'
    const out = rewriteDetailUrls(input, rewrite)
    expect(out.text).toBe(`{"meta": {"detail_url": "${PROXY}/api/v1/cms/pages/1/?q=\\u2028"}}`)
  })

  it('ignores detail_url values that are not strings and metas that are not objects', () => {
    const input = '{"meta": {"detail_url": null}, "x": {"meta": ["http://cms/api/v1/cms/pages/1/"]}, "y": {"meta": {"detail_url": {"meta": {"detail_url": "/api/v1/cms/pages/2/"}}}}}'
    const out = rewriteDetailUrls(input, rewrite)
    expect(out.changed).toBe(1)
    expect(out.text).toBe(input.replace('"/api/v1/cms/pages/2/"', `"${PROXY}/api/v1/cms/pages/2/"`))
  })

  it('leaves a URL whose rewrite is itself byte for byte', () => {
    const input = `{"meta": {"detail_url": "${PROXY}/api/v1/cms/pages/1/"}}`
    expect(findDetailUrlEdits(parseJsonSpans(input), rewrite)).toEqual([])
  })

  it('rejects invalid JSON', () => {
    expect(() => rewriteDetailUrls('{"meta": {"detail_url": "x"}', rewrite)).toThrow(SyntaxError)
  })
})

describe('rewriteDetailUrlsWithSpans', () => {
  const rewrite = createUrlRewriter({ baseUrl: `${PROXY}/shield`, upstreamPathPrefix: '/cms' })

  it('returns spans into the new text, so listing items can be sliced out directly', () => {
    const items = Array.from({ length: 30 }, (_, i) => ({
      id: i,
      meta: {
        type: 'blog.BlogPage',
        detail_url: `${CMS}/cms/api/v1/cms/pages/${i}/`,
        html_url: `${CMS}/blog/${i}/`,
        parent: i % 3 === 0 ? null : { id: 1, meta: { type: 'x.Y', detail_url: `/cms/api/v1/cms/pages/1/` } },
      },
      title: `Päge ${i}`,
    }))
    const input = JSON.stringify({ meta: { total_count: 30 }, items }, null, 4)
    const { text, root, changed } = rewriteDetailUrlsWithSpans(input, rewrite)
    expect(changed).toBe(30 + 20)
    expect(text).toBe(rewriteDetailUrls(input, rewrite).text)
    expect(spansOf(root)).toEqual(spansOf(parseJsonSpans(text)))
    const second = getPath(root, ['items', 1]) as JsonNode
    expect(JSON.parse(text.slice(second.start, second.end))).toMatchObject({
      id: 1,
      meta: { detail_url: `${PROXY}/shield/api/v1/cms/pages/1/`, html_url: `${CMS}/blog/1/` },
    })
  })

  it('returns the original text and tree when nothing changes', () => {
    const input = '{"items": []}'
    const out = rewriteDetailUrlsWithSpans(input, rewrite)
    expect(out.text).toBe(input)
    expect(out.changed).toBe(0)
    expect(spansOf(out.root)).toEqual(spansOf(parseJsonSpans(input)))
  })

  it('agrees with a fresh parse of the new text for arbitrary documents and URLs', () => {
    const url = fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.webPath().map((p) => `/cms/api/v1/cms${p}/`),
      fc.tuple(fc.webUrl(), fc.string({ unit: 'binary', maxLength: 6 })).map(([u, s]) => `${u}/cms/api/v1/cms/${s}/`),
      fc.string({ unit: 'binary', maxLength: 6 }).map((s) => `/api/v1/cms/pages/${s}\u2028/`),
    )
    const { doc } = fc.letrec<{ doc: unknown; meta: unknown }>((tie) => ({
      doc: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('doc'), { maxLength: 4 }),
        fc.record({ id: fc.nat(), meta: tie('meta'), detail_url: url, other: tie('doc') }),
        fc.dictionary(fc.string({ maxLength: 3 }), tie('doc'), { maxKeys: 3 }),
      ),
      meta: fc.record({ detail_url: url, html_url: url, parent: tie('doc') }, { requiredKeys: ['detail_url'] }),
    }))
    const counter: RewriteUrl = (u) => {
      const out = rewrite(u)
      return out === undefined ? undefined : out + 'é'
    }
    fc.assert(
      fc.property(doc, fc.constantFrom<number | undefined>(undefined, 4), (value, indent) => {
        const input = JSON.stringify(value, null, indent)
        const { text, root, changed } = rewriteDetailUrlsWithSpans(input, counter)
        expect(text).toBe(rewriteDetailUrls(input, counter).text)
        expect(changed).toBe(rewriteDetailUrls(input, counter).changed)
        expect(spansOf(root)).toEqual(spansOf(parseJsonSpans(text)))
        expect(toPlain(root)).toEqual(JSON.parse(text))
        expect(keyOrder(root)).toEqual(keyOrder(parseJsonSpans(input)))
      }),
      { numRuns: 300 },
    )
  })
})
