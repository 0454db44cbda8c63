/**
 * A listing window read from its bytes gives exactly what reading its text as spans gives: the
 * same fields, the same item texts (URLs rewritten, extra members cut), the same language.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isProxyError } from '../errors.js'
import { getMember, getPath } from '../json/json-spans.js'
import { renderWagtailJson } from '../json/json-text.js'
import { createUrlRewriter, rewriteDetailUrlsWithSpans } from '../json/rewrite-detail-urls.js'
import { localeOfItem, stripExtraFields, type ListingExtras } from './listing-fields.js'
import { ListingWindowReader } from './read-listing-window.js'
import { readInteger, readListItem, readListItemWithFlags } from './read-page-fields.js'

const rewriteUrl = createUrlRewriter({ baseUrl: 'https://shield.example/é', upstreamPathPrefix: '/cms' })

/** The same window read from its text, as spans. */
function readAsSpans(text: string, extras: ListingExtras | undefined) {
  const { text: rewritten, root } = rewriteDetailUrlsWithSpans(text, rewriteUrl)
  const total = readInteger(getPath(root, ['meta', 'total_count']), 'meta.total_count', 'w')
  const items = getMember(root, 'items')
  if (items?.kind !== 'array') throw new Error('no items')
  const pages = items.items.map((item) => {
    const fields = extras ? readListItemWithFlags(item, 'w') : readListItem(item, 'w')
    const listItem = extras ? stripExtraFields(rewritten, item, extras) : rewritten.slice(item.start, item.end)
    return { ...fields, listItem }
  })
  if (!extras?.locale) return { total, pages }
  const locales = items.items.map(localeOfItem)
  const first = locales[0]
  return { total, pages, locale: first != null && locales.every((code) => code === first) ? first : null }
}

const text = fc.string({ unit: 'grapheme', maxLength: 12 })
const item = fc.record(
  {
    id: fc.nat(),
    meta: fc.record(
      {
        type: fc.constantFrom('cms.GenericPage', 'cms.Home'),
        detail_url: fc.oneof(fc.nat().map((id) => `http://cms.example/cms/api/v1/cms/pages/${id}/`), text),
        html_url: fc.option(text),
        slug: text,
        show_in_menus: fc.boolean(),
        seo_title: text,
        search_description: text,
        first_published_at: fc.constant('2024-01-01T00:00:00Z'),
        locale: fc.constantFrom('en', 'de'),
        parent: fc.option(fc.record({ id: fc.nat(), meta: fc.record({ detail_url: fc.constant('/cms/api/v1/cms/pages/1/') }) })),
      },
      { requiredKeys: ['type', 'detail_url', 'slug'] },
    ),
    title: text,
    body: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: ['id', 'meta', 'title'] },
)

describe('ListingWindowReader', () => {
  it('reads any window as reading its text as spans does, with and without the extra fields', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 5 }), fc.nat(), fc.constantFrom<ListingExtras | undefined>(undefined, { locale: false }, { locale: true }), (items, extra, extras) => {
        const body = renderWagtailJson({ meta: { total_count: items.length + extra }, items })
        const read = new ListingWindowReader(rewriteUrl, extras).read(Buffer.from(body, 'utf8'), 'w')
        const expected = readAsSpans(body, extras)
        expect({ ...read, pages: read.pages.map((page) => ({ ...page })) }).toEqual(expected)
      }),
      { numRuns: 300 },
    )
  })

  it('refuses a body that is not JSON or has no items array, as a bad response', () => {
    const reader = new ListingWindowReader(rewriteUrl, undefined)
    for (const body of ['{"meta": {"total_count": 1}, "items": [', '{"meta": {"total_count": 1}, "items": {}}', '{"meta": {"total_count": "1"}, "items": []}']) {
      let error: unknown
      try {
        reader.read(Buffer.from(body), 'w')
      } catch (caught) {
        error = caught
      }
      expect(isProxyError(error, 'UPSTREAM_BAD_RESPONSE')).toBe(true)
    }
  })
})
