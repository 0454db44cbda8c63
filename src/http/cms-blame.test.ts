import { describe, expect, it } from 'vitest'
import { createError } from '../errors.js'
import { parseQueryParams } from '../query/query-params.js'
import { wagtailErrors } from '../query/wagtail-messages.js'
import { cmsFailedOnInput } from './cms-blame.js'

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
