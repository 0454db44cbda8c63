import { describe, expect, it } from 'vitest'
import { probeTree } from '../../test/helpers/make-snapshot.js'
import { matchesSelection } from '../tree/select-pages.js'
import { planDetail } from './plan-detail.js'
import { planFind } from './plan-find.js'
import { parseQueryParams } from './query-params.js'

const snapshot = probeTree()

/** 'page' when the detail is served, otherwise the 404 message or the error/forward. */
function detail(pathId: string, query = '') {
  const plan = planDetail(pathId, parseQueryParams(query), snapshot)
  if (plan.kind !== 'index') return plan
  const page = plan.id === undefined ? undefined : snapshot.byId.get(plan.id)
  return page && matchesSelection(snapshot, page, plan.selection) ? `page ${page.id}` : `No ${plan.modelName} matches the given query.`
}

describe('planDetail (spec §4: every filter backend runs on the detail view)', () => {
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

  it.each(['order=foo', 'search=blog', 'fields=_,id', 'type=home.BlogPage&date=2024-01-02', 'locale=en'])('reads /pages/4/?%s through', (query) => {
    expect(planDetail('4', parseQueryParams(query), snapshot).kind).toBe('forward')
  })
})

describe('planFind (spec §4)', () => {
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

describe('detail and find: what Wagtail 7.x answers with a 500 is refused here (spec §2 table, §4)', () => {
  const error = (status: number, message: string) => ({ kind: 'error', error: { status, body: { message } } })

  it.each([
    ['first_published_at=abc', error(400, "field filter error. 'abc' is not a valid value for first_published_at (“abc” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.)")],
    ['search=blog&search_operator=xor', error(400, "search_operator must be either 'or' or 'and'")],
    ['site=localhost:abc', error(400, "Field 'port' expected a number but got 'abc'.")],
    ['site=', error(404, 'No Site matches the given query.')],
  ])('/pages/4/?%s', (query, expected) => {
    expect(planDetail('4', parseQueryParams(query), snapshot)).toEqual(expected)
  })

  it('counts a huge detail id in the length of what it would forward', () => {
    expect(planDetail('9'.repeat(3100), parseQueryParams('order=id'), snapshot)).toMatchObject({ kind: 'error', error: { status: 414 } })
    expect(planDetail('0'.repeat(3100) + '4', parseQueryParams('order=id'), snapshot).kind).toBe('forward')
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
