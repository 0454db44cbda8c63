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
