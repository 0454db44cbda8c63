/**
 * Whose fault a 500 from the CMS is, for a forwarded pages query. Wagtail fails with a 500 on some
 * inputs a client chose (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500); a
 * client should get the 4xx a fixed Wagtail gives, not a 502 that says the CMS is down. Kept apart
 * from the read-through that asks it so that the heuristics change alone, as Wagtail's versions do.
 * Pure.
 * @module
 */
import { isProxyError } from '../errors.js'
import { KNOWN_LISTING_PARAMETERS } from '../query/plan-listing.js'
import { FILTER_FIELDS } from '../query/plan-steps.js'
import type { QueryParams } from '../query/query-params.js'
import { fieldFilterRefusal, searchRefusal } from '../query/forward-guard.js'
import { wagtailErrors, type WagtailError } from '../query/wagtail-messages.js'

/** Parameters every page type has: a 500 on one of them is not blamed on its value. */
const GENERIC_PARAMETERS: ReadonlySet<string> = new Set([...KNOWN_LISTING_PARAMETERS, ...FILTER_FIELDS, 'html_path'])

/**
 * Generic parameters whose values the CMS parses in ways cms-shield can only approximate (a date
 * with non-ASCII digits: `forward-guard.ts` forwards what it cannot decide).
 */
const PARSED_BY_THE_CMS: ReadonlySet<string> = new Set(['first_published_at'])

/**
 * The 4xx for a forwarded query that a CMS answering everything else (`cmsHealthy`) failed with a
 * 500 on a value only it can judge: an unknown `site=` (Wagtail ≤ 7.x 500, 8.0 this 404), a filter
 * on a field of the page type's own or a date it parses, a non-numeric `id` next to find's
 * `html_path`, an `order` by an API field that is no database column (Wagtail ≤ 7.0).
 * `undefined`: a 502 it is, the CMS itself is failing (a 500 on `search=` is the search backend,
 * not the input).
 * @param cmsHealthy whether the CMS answers this instance's syncs (no failure since the last success).
 */
/**
 * The same for a query answered read-through as a whole (another Site's pages, another endpoint),
 * which no planner has read: a `find/` whose `id` the CMS could not look up is its "not found", and
 * on an endpoint whose own parameters cms-shield does not know, any of them may be the one to blame.
 */
export function forwardedFailedOnInput(
  error: unknown, params: QueryParams, view: 'list' | 'detail' | 'find', cmsHealthy: () => boolean, anyParameter: boolean,
): WagtailError | undefined {
  const blamed = cmsFailedOnInput(error, params, cmsHealthy)
  if (blamed || !isProxyError(error, 'UPSTREAM_BAD_STATUS') || error.details?.['status'] !== 500 || !cmsHealthy()) return blamed
  if (view === 'find' && !/^\d+$/.test(params.get('id') ?? '0')) return wagtailErrors.findNotFound
  return anyParameter && params.keys().some((key) => !GENERIC_PARAMETERS.has(key)) ? wagtailErrors.cmsRejectedQuery : undefined
}

export function cmsFailedOnInput(error: unknown, params: QueryParams | undefined, cmsHealthy: () => boolean): WagtailError | undefined {
  if (!params || !isProxyError(error, 'UPSTREAM_BAD_STATUS') || error.details?.['status'] !== 500) return undefined
  if (!cmsHealthy()) return undefined
  if (params.get('site') !== undefined) return wagtailErrors.siteNotFound
  const refusal = fieldFilterRefusal(params) ?? searchRefusal(params)
  if (refusal) return refusal
  if (params.get('html_path') !== undefined && !/^\d+$/.test(params.get('id') ?? '0')) return wagtailErrors.findNotFound
  // Wagtail ≤ 7.0 lets an API field that is no database column (`type`, `html_url`…) through
  // OrderingFilter's check and fails in the query: 7.1+'s 400 for the first field named.
  const order = params.get('order')
  if (order !== undefined && order !== '' && order !== 'random') return wagtailErrors.cannotOrderBy(order.split(',')[0]!)
  return params.keys().some((key) => !GENERIC_PARAMETERS.has(key) || PARSED_BY_THE_CMS.has(key)) ? wagtailErrors.cmsRejectedQuery : undefined
}
