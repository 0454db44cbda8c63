import { describe, expect, it } from 'vitest'
import { makeSnapshot, probeTree } from '../../test/helpers/make-snapshot.js'
import { matchesSelection } from '../tree/select-pages.js'
import { createKnownAbsent, findPathKey } from './known-absent.js'
import { planDetail } from './plan-detail.js'
import { planFind } from './plan-find.js'
import { planListing } from './plan-listing.js'
import { parseQueryParams } from './query-params.js'

const snapshot = probeTree()
const error = (status: number, message: string) => ({ kind: 'error', error: { status, body: { message } } })

/** 'page' when the detail is served, otherwise the 404 message or the error/forward. */
function detail(pathId: string, query = '', snap = snapshot) {
  const plan = planDetail(pathId, parseQueryParams(query), snap)
  if (plan.kind !== 'index') return plan
  const page = plan.id === undefined ? undefined : snap.byId.get(plan.id)
  return page && matchesSelection(snap, page, plan.selection) ? `page ${page.id}` : `No ${plan.modelName} matches the given query.`
}

describe('planDetail (every filter backend runs on the detail view)', () => {
  it.each([
    ['4', '', 'page 4'],
    ['004', '', 'page 4'],
    ['999', '', 'No Page matches the given query.'],
    ['1', '', 'No Page matches the given query.'],
    ['0', '', 'No Page matches the given query.'],
    ['99999999999999999999', '', 'No Page matches the given query.'],
    ['4', 'foo=bar', 'page 4'],
    ['4', 'limit=abc', 'page 4'],
    ['4', 'child_of=5', 'No Page matches the given query.'],
    ['6', 'child_of=4', 'page 6'],
    ['4', 'title=nomatch', 'No Page matches the given query.'],
    ['4', 'type=home.HomePage', 'No HomePage matches the given query.'],
    ['4', 'type=home.homepage', 'No HomePage matches the given query.'],
    ['4', 'type=home.BlogPage,home.HomePage', 'page 4'],
    ['3', 'type=home.BlogPage,home.BlogPage', 'No Page matches the given query.'],
    ['4', 'descendant_of=3', 'page 4'],
    ['3', 'descendant_of=3', 'No Page matches the given query.'],
    ['4', 'format=json&fields=', 'page 4'],
  ])('/pages/%s/?%s → %s', (id, query, expected) => {
    expect(detail(id, query)).toBe(expected)
  })

  it.each([
    ['4', 'child_of=abc', 400, 'child_of must be a positive integer'],
    ['4', 'type=nope', 400, "type doesn't exist"],
    ['4', 'format=xml', 404, ''],
  ])('/pages/%s/?%s → %i %j', (id, query, status, message) => {
    expect(detail(id, query)).toEqual({ kind: 'error', error: { status, body: { message } } })
  })

  it.each(['order=foo', 'search=blog', 'fields=_,locale', 'type=home.BlogPage&date=2024-01-02', 'locale=en'])('reads /pages/4/?%s through', (query) => {
    expect(planDetail('4', parseQueryParams(query), snapshot).kind).toBe('forward')
  })
})

describe('planFind', () => {
  const find = (query: string) => planFind(parseQueryParams(query), snapshot)

  it.each([
    ['html_path=/blog-one/child/', 6],
    ['html_path=blog-one', 4],
    ['html_path=blog-one/', 4],
    ['html_path=/', 3],
    ['html_path=//blog-one//', 4],
    ['id=4', 4],
    ['id=%204', 4],
    ['html_path=/blog-one/&id=3', 4],
    // Routed, but not of the asked type: Wagtail falls back to `id`.
    ['html_path=/blog-one/&type=home.HomePage&id=3', 3],
  ])('?%s finds page %i', (query, id) => {
    const plan = find(query)
    expect(plan.kind === 'index' && plan.id).toBe(id)
  })

  it.each(['', 'id=999', 'id=abc', 'html_path=/blog-one/&type=home.HomePage'])('?%s finds nothing', (query) => {
    const plan = find(query)
    expect(plan.kind === 'index' && plan.id).toBeUndefined()
  })

  it('asks the CMS about paths the slug tree does not know', () => {
    expect(find('html_path=/nope/').kind).toBe('forward')
  })

  it('keeps every other parameter, every value, in first-appearance order, for the redirect', () => {
    const plan = find('html_path=/blog-one/&fields=_,id&foo=bar&id=3&foo=baz')
    expect(plan.kind === 'index' && plan.forwardQuery).toEqual([
      ['fields', ['_,id']],
      ['foo', ['bar', 'baz']],
    ])
  })

  it('refuses a bad type and an unknown format in Wagtail\'s words', () => {
    expect(find('id=4&type=nope')).toEqual({ kind: 'error', error: { status: 400, body: { message: "type doesn't exist" } } })
    expect(find('id=4&format=xml')).toEqual({ kind: 'error', error: { status: 404, body: { message: '' } } })
  })
})

describe('detail and find: what Wagtail 7.x answers with a 500 is refused here', () => {

  it.each([
    ['first_published_at=abc', error(400, "field filter error. 'abc' is not a valid value for first_published_at (“abc” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.)")],
    ['search=blog&search_operator=xor', error(400, "search_operator must be either 'or' or 'and'")],
    ['site=localhost:abc', error(400, "Field 'port' expected a number but got 'abc'.")],
    ['site=', error(404, 'No Site matches the given query.')],
  ])('/pages/4/?%s', (query, expected) => {
    expect(planDetail('4', parseQueryParams(query), snapshot)).toEqual(expected)
  })

  it('counts a huge detail id in the length of what it would forward', () => {
    expect(planDetail('9'.repeat(3100), parseQueryParams('order=foo'), snapshot)).toMatchObject({ kind: 'error', error: { status: 414 } })
    expect(planDetail('0'.repeat(3100) + '4', parseQueryParams('order=foo'), snapshot).kind).toBe('forward')
  })

  it.each([
    ['id=4&site=localhost:abc', error(400, "Field 'port' expected a number but got 'abc'.")],
    ['html_path=/nope/&site=%00', error(404, 'No Site matches the given query.')],
    // 2 + 500 × 7 bytes once `/` is percent-encoded, plus `html_path=`.
    [`html_path=/${'nope/'.repeat(500)}`, error(414, 'the query is too long to forward to the CMS (3513 bytes encoded; at most 3072)')],
  ])('find/?%.60s', (query, expected) => {
    expect(planFind(parseQueryParams(query), snapshot)).toEqual(expected)
  })

  it('answers "not found" for a non-numeric id instead of forwarding it, unless html_path may still route', () => {
    expect(planFind(parseQueryParams('site=localhost&id=abc'), snapshot)).toEqual(error(404, 'not found'))
    expect(planFind(parseQueryParams('type=home.Unseen&id='), snapshot)).toEqual(error(404, 'not found'))
    expect(planFind(parseQueryParams('site=localhost&id=%204%20'), snapshot).kind).toBe('forward')
    expect(planFind(parseQueryParams('html_path=/nope/&id=abc'), snapshot).kind).toBe('forward')
  })

  it('forwards find/ without checking filters it never runs', () => {
    expect(planFind(parseQueryParams('html_path=/nope/&first_published_at=abc&search=x&search_operator=xor'), snapshot).kind).toBe('forward')
  })
})

describe('planDetail: what Wagtail reads only once it has the page (get_object_or_404, then the serializer)', () => {
  const noPage = 'No Page matches the given query.'
  it.each([
    ['999', 'fields=title', noPage],
    ['999', 'fields=*&limit=abc&foo=bar', noPage],
    ['1', 'fields=_,id,parent', noPage],
    ['99999999999999999999', 'fields=title', noPage],
    ['999', 'first_published_at=2024-01-02T03:04:05Z&fields=title', noPage],
    ['999', 'alias_of=5', noPage],
    ['999', 'alias_of=-3&fields=title', noPage],
    ['999', 'order=-title&fields=title', noPage],
    ['999', 'order=random', noPage],
    ['4', 'type=home.HomePage&fields=title', 'No HomePage matches the given query.'],
    ['6', 'child_of=3&fields=title', noPage],
    ['3', 'descendant_of=4&alias_of=5', noPage],
    ['4', 'title=nomatch&fields=title', noPage],
    ['5', 'id=4&first_published_at=2024-01-02', noPage],
    // A valid order changes nothing on a detail, found or not.
    ['4', 'order=id', 'page 4'],
    ['4', 'order=-title', 'page 4'],
    ['4', 'order=random&limit=2', 'page 4'],
  ])('/pages/%s/?%s → %s, without the CMS', (id, query, expected) => {
    expect(detail(id, query)).toBe(expected)
  })

  it.each([
    // The page is there: the serializer or the filter needs the CMS.
    ['4', 'fields=locale'],
    ['4', 'first_published_at=2024-01-02'],
    ['6', 'child_of=4&fields=_,locale'],
    // Steps Wagtail runs before the lookup that only the CMS can decide.
    ['999', 'type=home.Unseen&fields=title'],
    ['999', 'site=localhost&fields=title'],
    ['999', 'type=home.BlogPage&date=2024-01-02&fields=title'],
    ['999', 'order=foo&fields=title'],
    ['999', 'order=title,id'],
    ['999', 'order=&fields=title'],
    ['999', 'order=random&offset=1'],
    ['999', 'translation_of=4&fields=title'],
    ['999', 'locale=en&fields=title'],
    ['999', 'search=blog&fields=title'],
    // Values the database itself may fail on.
    ['999', 'alias_of=99999999999999999999'],
    ['999', 'first_published_at=9999-12-31T23:00:00-05:00'],
    ['999', 'first_published_at=0001-01-01T00:00:00%2B05:00'],
    ['999', 'first_published_at=%D9%A9%D9%A9%D9%A9%D9%A9-12-31'],
    ['999', 'first_published_at=20240506'],
  ])('reads /pages/%s/?%s through', (id, query) => {
    expect(planDetail(id, parseQueryParams(query), snapshot).kind).toBe('forward')
  })

  it.each([
    ['fields=title&child_of=abc', error(400, 'child_of must be a positive integer')],
    ['fields=title&descendant_of=999', error(400, "ancestor page doesn't exist")],
    ['fields=title&id=abc', error(400, "field filter error. 'abc' is not a valid value for id (invalid literal for int() with base 10: 'abc')")],
    ['fields=title&type=nope', error(400, "type doesn't exist")],
    ['fields=title&format=xml', error(404, '')],
    ['fields=title&first_published_at=abc', error(400, "field filter error. 'abc' is not a valid value for first_published_at (“abc” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.)")],
  ])('keeps the errors of earlier steps first: /pages/999/?%s', (query, expected) => {
    expect(planDetail('999', parseQueryParams(query), snapshot)).toEqual(expected)
  })

  it('answers an absent id filtered by ancestry here even when only the CMS can apply that filter', () => {
    const withOrphan = makeSnapshot([
      { id: 3, parent: null },
      { id: 4, parent: 3 },
      { id: 9, parent: null }, // a live page below an unpublished one
      { id: 5, parent: 3 },
    ])
    expect(detail('999', 'descendant_of=3&fields=title', withOrphan)).toBe('No Page matches the given query.')
    expect(detail('999', 'ancestor_of=999&fields=title', withOrphan)).toEqual(error(400, "descendant page doesn't exist"))
    expect(planDetail('9', parseQueryParams('descendant_of=3&fields=title'), withOrphan).kind).toBe('forward')
  })
})

describe('planners with what the CMS said does not exist', () => {
  const known = createKnownAbsent(10)
  known.addType('home.nope')
  known.addFindPath(findPathKey('/nope/', undefined, undefined))
  known.addFindPath(findPathKey('gone', undefined, 'localhost'))
  known.addFindPath(findPathKey('/typed/', 'home.homepage', undefined))
  const typeError = error(400, "type doesn't exist")

  it.each(['type=home.Nope', 'type=home.NOPE&limit=1', 'type=home.BlogPage,home.nope&fields=x', 'type=home.nope&foo=bar', 'type=home.Nope&limit=abc'])(
    'answers ?%s with the 400 in every view, before any later step', (query) => {
      expect(planListing(parseQueryParams(query), snapshot, undefined, known)).toEqual(typeError)
      expect(planDetail('4', parseQueryParams(query), snapshot, undefined, known)).toEqual(typeError)
      expect(planFind(parseQueryParams(`${query}&html_path=/blog-one/`), snapshot, undefined, known)).toEqual(typeError)
    },
  )

  it('keeps content negotiation first, and the app label exact', () => {
    expect(planListing(parseQueryParams('type=home.Nope&format=xml'), snapshot, undefined, known)).toEqual(error(404, ''))
    expect(planListing(parseQueryParams('type=Home.nope'), snapshot, undefined, known).kind).toBe('forward')
  })

  it.each([
    ['html_path=/nope/', error(404, 'not found')],
    ['html_path=nope&fields=_,id&foo=bar', error(404, 'not found')],
    ['html_path=//nope//&id=999', error(404, 'not found')],
    ['html_path=/nope/&id=abc', error(404, 'not found')],
    ['html_path=typed&id=4&type=home.HomePage', error(404, 'not found')],
    ['html_path=gone&site=localhost', error(404, 'not found')],
  ])('answers find/?%s here', (query, expected) => {
    expect(planFind(parseQueryParams(query), snapshot, undefined, known)).toEqual(expected)
  })

  it.each([
    // The path may route to a page outside the queryset, and then the id decides.
    'html_path=/nope/&id=4',
    // Another queryset, or an id only the CMS can look up in it.
    'html_path=/nope/&type=home.BlogPage',
    'html_path=/nope/&site=localhost',
    'html_path=gone&site=localhost&id=4',
    'html_path=gone',
    'html_path=typed&id=3&type=home.HomePage',
  ])('still asks the CMS for find/?%s', (query) => {
    expect(planFind(parseQueryParams(query), snapshot, undefined, known).kind).toBe('forward')
  })
})
