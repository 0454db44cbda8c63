import { describe, expect, it } from 'vitest'
import { createError } from '../errors.js'
import { parseQueryParams } from '../query/query-params.js'
import { wagtailErrors } from '../query/wagtail-messages.js'
import { cmsFailedOnInput, forwardedFailedOnInput } from './cms-blame.js'

const failed = (status: number) => createError('UPSTREAM_BAD_STATUS', `the CMS answered ${status}`, { details: { status } })
const healthy = () => true
const blame = (query: string, error: unknown = failed(500), cmsHealthy = healthy) => cmsFailedOnInput(error, parseQueryParams(query), cmsHealthy)

describe('blaming a 500 from the CMS on a forwarded query', () => {
  it('blames the CMS (a 502) unless it answered a 500 and answers everything else', () => {
    expect(blame('site=nowhere', failed(502))).toBeUndefined()
    expect(blame('site=nowhere', new Error('socket hang up'))).toBeUndefined()
    expect(blame('site=nowhere', failed(500), () => false)).toBeUndefined()
    expect(cmsFailedOnInput(failed(500), undefined, healthy)).toBeUndefined()
  })

  it('asks whether the CMS is healthy only about a 500', () => {
    let asked = 0
    blame('site=nowhere', failed(502), () => (asked++, true))
    expect(asked).toBe(0)
  })

  it("answers an unknown site, a non-numeric find id and an order by a non-column with Wagtail's 4xx", () => {
    expect(blame('site=nowhere')).toBe(wagtailErrors.siteNotFound)
    expect(blame('html_path=/a/&id=x')).toBe(wagtailErrors.findNotFound)
    expect(blame('order=type,title')).toEqual(wagtailErrors.cannotOrderBy('type'))
  })

  it('blames a parameter of the page type\'s own or a date the CMS parses, not a generic one', () => {
    expect(blame('type=blog.BlogPage&author=x')).toBe(wagtailErrors.cmsRejectedQuery)
    expect(blame('first_published_at=2024-01-01')).toBe(wagtailErrors.cmsRejectedQuery)
    expect(blame('search=blog')).toBeUndefined()
    expect(blame('order=random&limit=5')).toBeUndefined()
  })
})

describe('blaming a 500 on a query read through as a whole (another Site, another endpoint)', () => {
  const forwarded = (query: string, view: 'list' | 'detail' | 'find', endpoint: boolean, error: unknown = failed(500), cmsHealthy = healthy) =>
    forwardedFailedOnInput(error, parseQueryParams(query), view, cmsHealthy, endpoint)

  it('answers a find whose id the CMS could not look up "not found", on pages and endpoints alike', () => {
    expect(forwarded('id=abc', 'find', false)).toBe(wagtailErrors.findNotFound)
    expect(forwarded('id=abc', 'find', true)).toBe(wagtailErrors.findNotFound)
    expect(forwarded('id=7', 'find', true)).toBeUndefined()
  })

  it('blames an endpoint\'s own parameter, never the generic ones, and nothing while the CMS fails', () => {
    expect(forwarded('tags=x', 'list', true)).toBe(wagtailErrors.cmsRejectedQuery)
    expect(forwarded('limit=3&offset=2', 'list', true)).toBeUndefined()
    expect(forwarded('tags=x', 'list', false)).toBe(wagtailErrors.cmsRejectedQuery)
    expect(forwarded('tags=x', 'list', true, failed(502))).toBeUndefined()
    expect(forwarded('id=abc', 'find', true, failed(500), () => false)).toBeUndefined()
  })

  it('keeps the pages rules first: an unknown site is its 404', () => {
    expect(forwarded('site=nowhere', 'list', false)).toBe(wagtailErrors.siteNotFound)
  })
})
