/**
 * Plans `GET /api/v1/cms/pages/<id>/`. Every filter backend runs on the detail view too, but
 * unknown keys, `limit` and `offset` are ignored (docs/wagtail-compatibility.md#detail-view).
 * @module
 */
import { matchesSelection } from '../tree/select-pages.js'
import type { Snapshot } from '../tree/snapshot.js'
import { forwardUnlessDoomed } from './forward-guard.js'
import { djangoDateTime } from './django-datetime.js'
import { negotiate } from './negotiate.js'
import { pythonInt } from './python-int.js'
import type { QueryParams } from './query-params.js'
import type { DetailPlan } from './plan-types.js'
import { KNOWN_LISTING_PARAMETERS } from './plan-listing.js'
import type { KnownAbsent } from './known-absent.js'
import {
  baseQueryset, FILTER_FIELDS, TREE_NOT_EXACT, fieldFilters, toPageId, translationLocaleSearch, treeFilters, typeDateOrders, type TreeFilters,
} from './plan-steps.js'
import { DATABASE_INT_MAX, notAcceptableIn, wagtailErrors } from './wagtail-messages.js'
import { parseFieldsParameter } from './fields-parameter.js'
import { chooseFields, membersOf, storedFields } from './field-selection.js'
import { parseJsonSpans } from '../json/json-spans.js'
import { bytesOf } from '../tree/detail-body.js'

const KNOWN = new Set<string>([...KNOWN_LISTING_PARAMETERS, ...FILTER_FIELDS])

/**
 * OrderingFilter values every Wagtail version accepts with any page type: `id`, `title` or
 * `first_published_at` (fields every page has) either way round, or `random`, which fails only next to an `offset` key;
 * and with one type, its own date fields the CMS was seen to order by (`dates`). On a
 * detail the order changes nothing: the page is looked up in the ordered queryset.
 */
function orderAlwaysAccepted(params: QueryParams, dates: Readonly<Record<string, unknown>> | undefined): boolean {
  const order = params.get('order')
  if (order === 'random') return !params.has('offset')
  if (['id', '-id', 'title', '-title', 'first_published_at', '-first_published_at'].includes(order ?? '')) return true
  const field = order?.startsWith('-') ? order.slice(1) : order
  return dates !== undefined && field !== undefined && Object.hasOwn(dates, field)
}

/**
 * Whether the database takes the values of the filters the CMS applies (`first_published_at`,
 * `alias_of`, both already validated in FieldsFilter's place) whatever the page: a foreign key
 * beyond a 64-bit integer or a datetime at the very edge of the calendar (a time zone shift
 * overflows it) may fail in the query itself, so those stay with the CMS, as do dates written
 * with anything but printable ASCII.
 */
function databaseTakesFilterValues(params: QueryParams): boolean {
  const aliasOf = params.get('alias_of')
  if (aliasOf !== undefined) {
    const parsed = pythonInt(aliasOf)
    if (!parsed.ok || parsed.value > DATABASE_INT_MAX || parsed.value < -DATABASE_INT_MAX - 1n) return false
  }
  const published = params.get('first_published_at')
  if (published !== undefined) {
    if (djangoDateTime(published).kind !== 'valid') return false
    // Years 1 and 9999 (ASCII digits only, so the year is where it seems).
    if (/[^\x20-\x7e]/.test(published) || /^\s*(0001|9999)-/.test(published)) return false
  }
  return true
}

/**
 * @param pathId the id segment of the path: Django's `[0-9]+`, leading zeros allowed.
 * @param known what the CMS said does not exist under this snapshot.
 */
export function planDetail(pathId: string, params: QueryParams, snapshot: Snapshot, accept?: string, known?: KnownAbsent): DetailPlan {
  const refused = negotiate(params, accept, notAcceptableIn(snapshot.dialect.notAcceptableText))
  if (refused) return { kind: 'error', error: refused }
  // The id is forwarded without its leading zeros (`forwarded-query.ts`).
  const forwardedId = /^[0-9]+$/.test(pathId) ? String(BigInt(pathId)) : pathId
  const forward = (reason: string) => forwardUnlessDoomed(params, reason, { view: 'detail', pathId: forwardedId })

  const typed = baseQueryset(params, snapshot, known)
  if ('error' in typed) return { kind: 'error', error: typed.error }
  if ('forward' in typed) return forward(typed.forward)

  // Unknown keys are ignored here, unless one model's own fields could be filters.
  if (typed.value.singleModel && params.keys().some((key) => !KNOWN.has(key))) {
    return forward('model-specific parameters')
  }

  // What Wagtail decides only once it has the page: `get_object_or_404` runs after every filter
  // backend and before the serializer (which reads `fields`), and filters only narrow the
  // queryset. Such a reason needs the CMS only for a page the locally known part could match.
  let afterLookup: string | undefined

  const fields = fieldFilters(params, snapshot.dialect)
  if ('error' in fields) return { kind: 'error', error: fields.error }
  if ('forward' in fields) return forward(fields.forward)
  if (fields.value.needsCms) {
    if (!databaseTakesFilterValues(params)) return forward('filter answered by the CMS')
    afterLookup = 'filter answered by the CMS'
  }

  const tree = treeFilters(params, snapshot)
  if ('error' in tree) return { kind: 'error', error: tree.error }
  let treeSelection: TreeFilters = {}
  if ('forward' in tree) {
    // The ids were found visible; only applying the filter needs the tree the CMS has.
    if (tree.forward !== TREE_NOT_EXACT) return forward(tree.forward)
    afterLookup ??= tree.forward
  } else {
    treeSelection = tree.value
  }

  if (params.has('order') && !orderAlwaysAccepted(params, typeDateOrders(snapshot, typed.value))) return forward('order is answered by the CMS')
  const locale = translationLocaleSearch(params, snapshot)
  if ('error' in locale) return { kind: 'error', error: locale.error }
  if ('forward' in locale) return forward(locale.forward)

  const id = /^[0-9]+$/.test(pathId) ? toPageId(BigInt(pathId)) : undefined
  const selection = { types: typed.value.types, filters: fields.value.filters, ...treeSelection, ...locale.value }
  const index = { kind: 'index', id, selection, modelName: typed.value.modelName } as const
  const page = id === undefined ? undefined : snapshot.byId.get(id)
  // Everything below is read once the page is found: without it, the 404 is all there is.
  if (!page || !matchesSelection(snapshot, page, selection)) return index
  if (afterLookup !== undefined) return forward(afterLookup)
  const wanted = params.get('fields')
  if (wanted === undefined || wanted === '') return index
  const parsed = parseFieldsParameter(wanted)
  if (!parsed.ok) return { kind: 'error', error: wagtailErrors.fieldsError(parsed.message) }
  const detail = parseJsonSpans(bytesOf(page.detail).toString('utf8'))
  if (detail.kind !== 'object') return forward('fields of a detail that is no object')
  const chosen = chooseFields(parsed.fields, storedFields(detail), 'detail', snapshot.dialect.unlistedLocale)
  switch (chosen.kind) {
    case 'error': return { kind: 'error', error: chosen.error }
    case 'forward': return forward(chosen.reason)
    case 'default': return index
    case 'select': return { ...index, members: membersOf(chosen) }
  }
}
