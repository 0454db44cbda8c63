import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeSnapshot, probeTree } from '../../test/helpers/make-snapshot.js'
import { selectPages } from '../tree/select-pages.js'
import { planListing } from './plan-listing.js'
import { parseQueryParams } from './query-params.js'

const snapshot = probeTree()
const plan = (query: string, accept?: string, snap = snapshot) => planListing(parseQueryParams(query), snap, accept)
const ids = (query: string, snap = snapshot) => {
  const p = plan(query, undefined, snap)
  if (p.kind !== 'index') throw new Error(`expected an index plan, got ${JSON.stringify(p)}`)
  const all = selectPages(snap, p.query)
  return { total: all.length, ids: all.slice(p.query.offset, p.query.offset + p.query.limit).map((page) => page.id) }
}

describe('planListing: Wagtail texts, answered locally', () => {
  it.each([
    ['limit=abc', 400, 'limit must be a positive integer'],
    ['limit=-1', 400, 'limit must be a positive integer'],
    ['limit=', 400, 'limit must be a positive integer'],
    ['limit=1.5', 400, 'limit must be a positive integer'],
    ['limit=21', 400, 'limit cannot be higher than 20'],
    ['limit=99999999999999999999', 400, 'limit cannot be higher than 20'],
    ['offset=abc', 400, 'offset must be a positive integer'],
    ['offset=-1', 400, 'offset must be a positive integer'],
    ['offset=abc&limit=abc', 400, 'offset must be a positive integer'],
    ['child_of=abc', 400, 'child_of must be a positive integer'],
    ['child_of=-3', 400, 'child_of must be a positive integer'],
    ['child_of=', 400, 'child_of must be a positive integer'],
    ['child_of=999', 400, "parent page doesn't exist"],
    ['child_of=1', 400, "parent page doesn't exist"],
    ['child_of=99999999999999999999', 400, "parent page doesn't exist"],
    ['descendant_of=abc', 400, 'descendant_of must be a positive integer'],
    ['descendant_of=999', 400, "ancestor page doesn't exist"],
    ['descendant_of=3&child_of=3', 400, 'filtering by descendant_of with child_of is not supported'],
    ['child_of=3&descendant_of=3&order=nope', 400, 'filtering by descendant_of with child_of is not supported'],
    ['ancestor_of=root&search=x&search_operator=xor', 400, 'ancestor_of must be a positive integer'],
    ['ancestor_of=abc', 400, 'ancestor_of must be a positive integer'],
    ['ancestor_of=999', 400, "descendant page doesn't exist"],
    ['type=abc', 400, "type doesn't exist"],
    ['type=a.b.c', 400, "type doesn't exist"],
    ['type=.x', 400, "type doesn't exist"],
    ['foo=bar', 400, 'query parameter is not an operation or a recognised field: foo'],
    ['zeta=1&alpha=2', 400, 'query parameter is not an operation or a recognised field: alpha, zeta'],
    ['date=2024-01-02', 400, 'query parameter is not an operation or a recognised field: date'],
    ['fields=_,id&limit=2&LIMIT=5', 400, 'query parameter is not an operation or a recognised field: LIMIT'],
    ['show_in_menus=abc', 400, "field filter error. 'abc' is not a valid value for show_in_menus (expected 'true' or 'false', got 'abc')"],
    ['show_in_menus=True', 400, "field filter error. 'True' is not a valid value for show_in_menus (expected 'true' or 'false', got 'True')"],
    ['id=abc', 400, "field filter error. 'abc' is not a valid value for id (invalid literal for int() with base 10: 'abc')"],
    ['slug=%00', 400, 'field filter error. null characters are not allowed for slug'],
    // Converted fields fail their conversion before the NUL check is reached.
    ['show_in_menus=%00', 400, "field filter error. '\u0000' is not a valid value for show_in_menus (expected 'true' or 'false', got '\u0000')"],
    ['id=%00', 400, "field filter error. '\u0000' is not a valid value for id (invalid literal for int() with base 10: '\\x00')"],
    ['alias_of=abc', 400, "field filter error. 'abc' is not a valid value for alias_of (Field 'id' expected a number but got 'abc'.)"],
    ['format=xml', 404, ''],
    // Validation order (docs/wagtail-compatibility.md#validation-order).
    ['foo=1&type=nope', 400, "type doesn't exist"],
    ['foo=1&limit=abc', 400, 'query parameter is not an operation or a recognised field: foo'],
    ['id=abc&child_of=abc', 400, "field filter error. 'abc' is not a valid value for id (invalid literal for int() with base 10: 'abc')"],
    ['limit=abc&fields=foo', 400, 'limit must be a positive integer'],
    ['child_of=abc&order=foo', 400, 'child_of must be a positive integer'],
  ])('?%s → %i %j', (query, status, message) => {
    expect(plan(query)).toEqual({ kind: 'error', error: { status, body: { message } } })
  })

  it('refuses an Accept header neither renderer satisfies with DRF\'s 406', () => {
    expect(plan('limit=1', 'text/plain')).toEqual({
      kind: 'error',
      error: { status: 406, body: { detail: 'Could not satisfy the request Accept header.' } },
    })
    expect(plan('limit=1', 'application/xml').kind).toBe('error')
    expect(plan('limit=1', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8').kind).toBe('index')
    expect(plan('limit=1', 'application/json; indent=2').kind).toBe('index')
    // `?format=` keeps only that format's renderer, which the Accept header must then take.
    expect(plan('format=json', 'text/plain').kind).toBe('error')
    expect(plan('format=json', 'text/html').kind).toBe('error')
    expect(plan('format=json', 'application/json').kind).toBe('index')
    expect(plan('format=api', 'application/json').kind).toBe('error')
    expect(plan('format=api', 'text/html').kind).toBe('index')
    // An empty `?format=` is falsy to DRF: no renderer is filtered out, Accept still counts.
    expect(plan('format=&limit=1').kind).toBe('index')
    expect(plan('format=', 'text/plain').kind).toBe('error')
  })

  it('answers "type=" by what the CMS was seen to do (5.2+ ignores it, older versions refuse)', () => {
    expect(plan('type=').kind).toBe('index')
    expect(plan('type=', undefined, probeTree({ emptyTypeIgnored: false }))).toEqual({
      kind: 'error',
      error: { status: 400, body: { message: "type doesn't exist" } },
    })
  })

  it('combines child_of and descendant_of when ancestor_of stands between them, as Wagtail\'s filters run', () => {
    const combined = plan('child_of=3&ancestor_of=5&descendant_of=3')
    expect(combined.kind).not.toBe('error')
  })

  it('uses the CMS\'s own maximum and default page size', () => {
    const unlimited = probeTree({ limitMax: null })
    expect(plan('limit=1000', undefined, unlimited).kind).toBe('index')
    const tiny = probeTree({ limitMax: 2 })
    expect(ids('', tiny)).toEqual({ total: 5, ids: [3, 4] })
    expect(plan('limit=3', undefined, tiny)).toEqual({
      kind: 'error',
      error: { status: 400, body: { message: 'limit cannot be higher than 2' } },
    })
  })
})

describe('planListing: index answers in tree order', () => {
  it.each([
    ['', { total: 5, ids: [3, 4, 6, 5, 8] }],
    ['limit=0', { total: 5, ids: [] }],
    ['offset=100', { total: 5, ids: [] }],
    ['offset=99999999999999999999&limit=1', { total: 5, ids: [] }],
    ['limit=1_0', { total: 5, ids: [3, 4, 6, 5, 8] }],
    ['limit=%2B2', { total: 5, ids: [3, 4] }],
    ['limit=%202%20', { total: 5, ids: [3, 4] }],
    ['limit=1&limit=2', { total: 5, ids: [3, 4] }],
    ['offset=2&limit=2', { total: 5, ids: [6, 5] }],
    ['child_of=root', { total: 3, ids: [4, 5, 8] }],
    ['child_of=3', { total: 3, ids: [4, 5, 8] }],
    ['child_of=%203%20', { total: 3, ids: [4, 5, 8] }],
    ['descendant_of=3', { total: 4, ids: [4, 6, 5, 8] }],
    ['descendant_of=root', { total: 4, ids: [4, 6, 5, 8] }],
    ['ancestor_of=6', { total: 2, ids: [3, 4] }],
    ['type=home.BlogPage', { total: 4, ids: [4, 6, 5, 8] }],
    ['type=home.blogpage,home.HomePage', { total: 5, ids: [3, 4, 6, 5, 8] }],
    ['type=wagtailcore.Page', { total: 5, ids: [3, 4, 6, 5, 8] }],
    ['show_in_menus=1', { total: 1, ids: [4] }],
    ['show_in_menus=false&child_of=3', { total: 2, ids: [5, 8] }],
    ['id=4', { total: 1, ids: [4] }],
    ['id=99999999999999999999', { total: 0, ids: [] }],
    ['title=Alpha', { total: 2, ids: [5, 8] }],
    ['slug=child', { total: 1, ids: [6] }],
    ['seo_title=SEO&search_description=desc', { total: 1, ids: [4] }],
    ['_=12345&format=json&fields=', { total: 5, ids: [3, 4, 6, 5, 8] }],
    ['search_operator=xor', { total: 5, ids: [3, 4, 6, 5, 8] }],
  ])('?%s', (query, expected) => {
    expect(ids(query)).toEqual(expected)
  })
})

describe('planListing: what only the CMS can answer goes read-through', () => {
  it.each([
    'search=blog',
    'order=title',
    'order=foo',
    'fields=_,locale',
    'locale=en',
    'translation_of=4',
    'site=localhost',
    'first_published_at=2024-01-01',
    'alias_of=5',
    'type=home.Unknown',
    'foo=1&type=nope.Nope',
    'type=home.BlogPage&date=2024-01-02',
    'rich_text_format=html',
  ])('?%s', (query) => {
    expect(plan(query).kind).toBe('forward')
  })

  it('reads descendant_of and ancestor_of through when a page\'s parent is not visible', () => {
    const withOrphan = makeSnapshot([
      { id: 3, parent: null },
      { id: 4, parent: 3 },
      { id: 9, parent: null }, // a live page below an unpublished one
      { id: 5, parent: 3 },
    ])
    expect(withOrphan.treeExact).toBe(false)
    expect(plan('descendant_of=3', undefined, withOrphan).kind).toBe('forward')
    expect(plan('ancestor_of=5', undefined, withOrphan).kind).toBe('forward')
    expect(plan('child_of=3', undefined, withOrphan).kind).toBe('index')
  })
})

describe('planListing: what Wagtail 7.x answers with a 500 is refused here, never forwarded', () => {
  const fieldError = (value: string, reason: string) =>
    `field filter error. '${value}' is not a valid value for first_published_at (${reason})`
  it.each([
    ['first_published_at=abc', 400, fieldError('abc', '“abc” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.')],
    ['first_published_at=2024-02-30', 400, fieldError('2024-02-30', '“2024-02-30” value has the correct format (YYYY-MM-DD) but it is an invalid date.')],
    ['first_published_at=2024-01-01T25:00', 400, fieldError('2024-01-01T25:00', '“2024-01-01T25:00” value has the correct format (YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ]) but it is an invalid date/time.')],
    // Forwarded for a check Wagtail runs first (an unseen type): the CMS answers that one first.
    ['type=home.Unseen&first_published_at=abc', 'forward', ''],
    ['order=nope&first_published_at=abc', 400, fieldError('abc', '“abc” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.')],
    ['search=blog&search_operator=xor', 400, "search_operator must be either 'or' or 'and'"],
    // A search of only whitespace, as Python's str.isspace() has it, fails the search backend.
    ['search=+', 400, 'the CMS could not answer this query: one of its parameters has a value it cannot use'],
    ['search=%E2%80%A8%09', 400, 'the CMS could not answer this query: one of its parameters has a value it cannot use'],
    ['search=+a+', 'forward', ''],
    ['order=title&search=blog&search_operator=', 'forward', ''],
    ['site=localhost:abc', 400, "Field 'port' expected a number but got 'abc'."],
    ['site=localhost:', 400, "Field 'port' expected a number but got ''."],
    ['site=', 404, 'No Site matches the given query.'],
    ['site=a%00b', 404, 'No Site matches the given query.'],
    [`site=${'h'.repeat(256)}`, 404, 'No Site matches the given query.'],
    ['site=nope', 'forward', ''],
    ['site=localhost:%2080', 'forward', ''],
    // Past 64 bits the offset goes as 2^63−1 (database-values.ts): every check runs at the CMS.
    ['order=title&offset=99999999999999999999', 'forward', ''],
    ['order=title&offset=9223372036854775807', 'forward', ''],
    // Over WAGTAILAPI_LIMIT_MAX: the CMS answers its own 400 before any overflow.
    ['search=x&limit=99999999999999999999', 'forward', ''],
  ])('?%s → %s %j', (query, status, message) => {
    const result = plan(query)
    if (status === 'forward') expect(result.kind).toBe('forward')
    else expect(result).toEqual({ kind: 'error', error: { status, body: { message } } })
  })

  it('forwards a limit past 64 bits where the CMS has no maximum (it goes as 2^63−1)', () => {
    const unlimited = probeTree({ limitMax: null })
    expect(plan('order=title&limit=9223372036854775808', undefined, unlimited).kind).toBe('forward')
    // The index answers any limit itself.
    expect(plan('limit=9223372036854775808', undefined, unlimited).kind).toBe('index')
  })

  it('accepts every operator the search backend lower-cases to and/or, and any operator with an empty search', () => {
    for (const query of ['search=x&search_operator=AND', 'search=x&search_operator=Or', 'search=&search_operator=xor', 'search_operator=xor&order=title']) {
      expect(plan(query).kind, query).toBe('forward')
    }
  })

  it('answers 414 instead of forwarding a query longer than a CMS web server takes', () => {
    const long = plan(`search=${'x'.repeat(3100)}`)
    expect(long).toEqual({
      kind: 'error',
      error: { status: 414, body: { message: 'the query is too long to forward to the CMS (3107 bytes encoded; at most 3072)' } },
    })
    // Percent-encoding is counted as sent: 1,100 commas are 3,300 bytes.
    expect(plan(`search=${','.repeat(1100)}`).kind).toBe('error')
    expect(plan(`search=${'x'.repeat(3000)}`).kind).toBe('forward')
    // A long query the index answers needs no CMS.
    expect(plan(`title=${'x'.repeat(5000)}`).kind).toBe('index')
  })
})

describe('planListing properties', () => {
  it('never throws, and every answer is an error, a forward or an index plan, for any query string', () => {
    const key = fc.constantFrom('limit', 'offset', 'child_of', 'descendant_of', 'ancestor_of', 'type', 'id', 'title', 'show_in_menus', 'format', 'fields', 'foo', '_')
    const value = fc.oneof(fc.string({ unit: 'grapheme' }), fc.integer({ min: -5, max: 30 }).map(String), fc.constantFrom('root', '3', '4', 'home.BlogPage'))
    fc.assert(
      fc.property(fc.array(fc.tuple(key, value), { maxLength: 5 }), fc.string(), (pairs, raw) => {
        const query = pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')
        for (const q of [query, raw]) {
          const result = planListing(parseQueryParams(q), snapshot)
          expect(['error', 'forward', 'index']).toContain(result.kind)
          if (result.kind === 'index') {
            expect(result.query.limit).toBeLessThanOrEqual(20)
            expect(result.query.offset).toBeGreaterThanOrEqual(0)
          }
        }
      }),
    )
  })
})
