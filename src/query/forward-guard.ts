/**
 * The last check before a query goes read-through: cms-shield never answers a 5xx for what a
 * client sends, so nothing leaves for the CMS that the CMS would answer with an HTML 500
 * (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500: bad dates, `search_operator=xor`, `site=nope`-like values) or
 * that its web server would refuse for its length. Those are answered here, in Wagtail's envelope.
 *
 * Wagtail checks in a fixed order (docs/wagtail-compatibility.md#validation-order) and the first failure wins. A forwarded query stops
 * the local steps early, so a step the CMS would have failed first (e.g. `order=foo`) can be
 * hidden behind one of these 400s: both are 400s, only the text differs, and no 500 gets out.
 * @module
 */
import { isPythonSpace } from './python-int.js'
import { djangoUrlencodedLength, type QueryParams } from './query-params.js'
import { djangoDateTime } from './django-datetime.js'
import { answeredByTheCms, siteFilter } from './plan-steps.js'
import { wagtailErrors, type WagtailError } from './wagtail-messages.js'

/**
 * Encoded bytes of query (and detail id) a read-through may carry. Gunicorn's default
 * `limit_request_line` is 4094 bytes for the whole request line, uWSGI's buffer 4096 bytes for
 * every header: 3 KiB leaves room for the method, the API path, a path prefix and the version.
 */
export const MAX_FORWARDED_QUERY_BYTES = 3072

export type ForwardPlan = { readonly kind: 'forward'; readonly reason: string } | { readonly kind: 'error'; readonly error: WagtailError }

/**
 * FieldsFilter's `first_published_at` (also checked in its place by `fieldFilters`): a query can
 * be forwarded before that step runs, e.g. for a `type` the snapshot has not seen.
 */
function unparsableDate(params: QueryParams): WagtailError | undefined {
  const value = params.get('first_published_at')
  if (value === undefined || value.includes('\u0000')) return undefined
  const verdict = djangoDateTime(value)
  return verdict.kind === 'invalid' ? wagtailErrors.fieldFilterInvalid(value, 'first_published_at', verdict.message) : undefined
}

/** `search_operator` reaches the backend only with a non-empty `search` (an empty one short-cuts to no results). */
function searchOperator(params: QueryParams): WagtailError | undefined {
  const search = params.get('search')
  const operator = params.get('search_operator')
  if (search === undefined || search === '' || operator === undefined || operator === '') return undefined
  // `PlainText(query, operator=operator or 'or')` lower-cases it first.
  const lowered = operator.toLowerCase()
  return lowered === 'and' || lowered === 'or' ? undefined : wagtailErrors.searchOperatorInvalid
}

/**
 * A search of nothing but whitespace (`search=+`, a lone U+2028) reaches the search backend, which
 * fails on a query with no terms: Wagtail 4.1 and 7.0 answer a 500 (seen on both).
 */
function blankSearch(params: QueryParams): WagtailError | undefined {
  const search = params.get('search')
  if (search === undefined || search === '') return undefined
  return Array.from(search).every((char) => isPythonSpace(char.codePointAt(0)!)) ? wagtailErrors.cmsRejectedQuery : undefined
}

/** Reasons to forward that Wagtail meets before FieldsFilter reads `first_published_at`, or in it. */
const BEFORE_FIELD_FILTERS: ReadonlySet<string> = new Set([
  'type unknown to the snapshot', answeredByTheCms('site'), 'version-dependent parameter', 'model-specific parameters',
])

/** What FieldsFilter would fail on with a 500: a `first_published_at` Django cannot parse. */
export function fieldFilterRefusal(params: QueryParams): WagtailError | undefined {
  return unparsableDate(params)
}

/** What Wagtail's search would fail on with a 500: a bad `search_operator`, then a blank query. */
export function searchRefusal(params: QueryParams): WagtailError | undefined {
  return searchOperator(params) ?? blankSearch(params)
}

export interface ForwardContext {
  readonly view: 'listing' | 'detail' | 'find'
  /** The detail id as it will be forwarded (leading zeros dropped). */
  readonly pathId?: string
}

/**
 * Forward `reason` to the CMS, unless the CMS would fail it with a 500 or could not take it.
 * Listing and detail run FieldsFilter and SearchFilter; find runs only `get_queryset` (docs/wagtail-compatibility.md#find-view).
 */
export function forwardUnlessDoomed(params: QueryParams, reason: string, context: ForwardContext): ForwardPlan {
  const site = siteFilter(params)
  if ('error' in site) return { kind: 'error', error: site.error }
  if (context.view !== 'find') {
    // FieldsFilter's verdict on the date is the answer only when every check before it passed
    // here; for a query forwarded earlier the CMS answers that check first, or fails on the date
    // with a 500 that gets the same 400 (`fieldFilterRefusal`, read by `http/cms-blame.ts`).
    const date = BEFORE_FIELD_FILTERS.has(reason) ? undefined : fieldFilterRefusal(params)
    if (date) return { kind: 'error', error: date }
    // SearchFilter runs last of the filters: its failure is the answer only when every check
    // before it passed here, i.e. when `search` is the first thing only the CMS can answer. Else
    // the CMS is asked, answers an earlier check's 4xx first, or fails on the search with a 500
    // that is answered with the same 4xx (`searchRefusal`, read by `http/cms-blame.ts`).
    const search = reason === answeredByTheCms('search') ? searchRefusal(params) : undefined
    if (search) return { kind: 'error', error: search }
  }
  // Every value of every key, as find forwards them: an upper bound for listing and detail too.
  const bytes = djangoUrlencodedLength(params.lists()) + (context.pathId?.length ?? 0)
  if (bytes > MAX_FORWARDED_QUERY_BYTES) return { kind: 'error', error: wagtailErrors.queryTooLong(bytes, MAX_FORWARDED_QUERY_BYTES) }
  return { kind: 'forward', reason }
}
