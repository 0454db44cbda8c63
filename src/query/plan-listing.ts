/**
 * Plans `GET /api/v1/cms/pages/`: Wagtail's listing pipeline (docs/wagtail-compatibility.md#validation-order) run against the snapshot.
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import { forwardUnlessDoomed } from './forward-guard.js'
import type { KnownAbsent } from './known-absent.js'
import { negotiate } from './negotiate.js'
import type { QueryParams } from './query-params.js'
import type { ListPlan } from './plan-types.js'
import { baseQueryset, FILTER_FIELDS, fieldFilters, orderStep, pagination, translationLocaleSearch, treeFilters, typeDateOrders, type Step, type TypeChoice } from './plan-steps.js'
import { orderIsTotal, selectPages } from '../tree/select-pages.js'
import type { ListFields, ListQuery } from '../tree/page-selection.js'
import type { PageRecord } from '../tree/snapshot.js'
import { bytesOf } from '../tree/detail-body.js'
import { parseJsonSpans } from '../json/json-spans.js'
import { parseFieldsParameter } from './fields-parameter.js'
import { chooseFields, listingStoredFields, storedFields } from './field-selection.js'
import { wagtailErrors, notAcceptableIn } from './wagtail-messages.js'

/** BaseAPIViewSet + PagesAPIViewSet `known_query_parameters` (docs/wagtail-compatibility.md#listing-parameters; identical 4.1 → 7.x). */
export const KNOWN_LISTING_PARAMETERS: ReadonlySet<string> = new Set([
  'limit', 'offset', 'fields', 'order', 'search', 'search_operator', '_', 'format',
  'type', 'child_of', 'ancestor_of', 'descendant_of', 'translation_of', 'locale', 'site',
])

const ALLOWED = new Set<string>([...KNOWN_LISTING_PARAMETERS, ...FILTER_FIELDS, 'locale'])

/** Known only to Wagtail 8.0 (docs/wagtail-compatibility.md#version-and-database-differences): whether it is an error depends on the CMS's version. */
const VERSION_DEPENDENT = new Set(['rich_text_format'])

/** Python's `sorted()` on str: by code point, not by UTF-16 unit. */
function byCodePoint(a: string, b: string): number {
  const ca = Array.from(a, (c) => c.codePointAt(0)!)
  const cb = Array.from(b, (c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) if (ca[i] !== cb[i]) return ca[i]! - cb[i]!
  return ca.length - cb.length
}

/** A page of the listing's type (any page for a listing of every type), whose stored detail says what fields the type has. */
function pageOfType(snapshot: Snapshot, types: ReadonlySet<string> | null): PageRecord | undefined {
  if (types === null) return snapshot.byId.get(snapshot.rootId)
  for (const page of snapshot.pages) if (types.has(page.type)) return page
  return undefined
}

/** `?fields=` on a listing, from the stored details (`field-selection.ts`); nothing for the defaults. */
function listingFields(params: QueryParams, snapshot: Snapshot, typed: TypeChoice): Step<{ fields?: ListFields }> {
  const wanted = params.get('fields')
  if (wanted === undefined || wanted === '') return { value: {} }
  const parsed = parseFieldsParameter(wanted)
  if (!parsed.ok) return { error: wagtailErrors.fieldsError(parsed.message) }
  const page = pageOfType(snapshot, typed.singleModel ? typed.types : null)
  const detail = page === undefined ? undefined : parseJsonSpans(bytesOf(page.detail).toString('utf8'))
  if (detail?.kind !== 'object') return { forward: 'fields of a type the snapshot holds no detail of' }
  const chosen = chooseFields(parsed.fields, listingStoredFields(storedFields(detail), typed.singleModel), 'listing', snapshot.dialect.unlistedLocale)
  switch (chosen.kind) {
    case 'error': return { error: chosen.error }
    case 'forward': return { forward: chosen.reason }
    case 'default': return { value: {} }
    case 'select': {
      const { body, meta, locale } = chosen
      return { value: { fields: { key: wanted, body, meta, ...(locale === undefined ? {} : { locale }) } } }
    }
  }
}

/** @param known what the CMS said does not exist under this snapshot (`type` names). */
export function planListing(params: QueryParams, snapshot: Snapshot, accept?: string, known?: KnownAbsent): ListPlan {
  const refused = negotiate(params, accept, notAcceptableIn(snapshot.dialect.notAcceptableText))
  if (refused) return { kind: 'error', error: refused }
  const forward = (reason: string) => forwardUnlessDoomed(params, reason, { view: 'listing' })

  const typed = baseQueryset(params, snapshot, known)
  if ('error' in typed) return { kind: 'error', error: typed.error }
  if ('forward' in typed) return forward(typed.forward)

  const unknown = params.keys().filter((key) => !ALLOWED.has(key))
  if (unknown.length > 0) {
    // With one model, its own database fields are parameters too; only the CMS knows them.
    if (typed.value.singleModel) return forward('model-specific parameters')
    if (unknown.some((key) => VERSION_DEPENDENT.has(key))) return forward('version-dependent parameter')
    return { kind: 'error', error: wagtailErrors.unknownParameters(unknown.sort(byCodePoint)) }
  }

  const fields = fieldFilters(params, snapshot.dialect)
  if ('error' in fields) return { kind: 'error', error: fields.error }
  if ('forward' in fields) return forward(fields.forward)

  const tree = treeFilters(params, snapshot)
  if ('error' in tree) return { kind: 'error', error: tree.error }
  if ('forward' in tree) return forward(tree.forward)

  // OrderingFilter an order the snapshot holds; TranslationOfFilter the groups the sync learned;
  // LocaleFilter a language the snapshot knows; SearchFilter the CMS.
  const ordered = orderStep(params, typeDateOrders(snapshot, typed.value))
  if ('forward' in ordered) return forward(ordered.forward)
  const locale = translationLocaleSearch(params, snapshot)
  if ('error' in locale) return { kind: 'error', error: locale.error }
  if ('forward' in locale) return forward(locale.forward)

  const page = pagination(params, snapshot)
  if ('error' in page) return { kind: 'error', error: page.error }
  if ('forward' in page) return forward(page.forward)

  if (fields.value.needsCms) return forward('filter answered by the CMS')
  // The serializer reads `fields` last (`fields=`, empty, means the defaults).
  const shown = listingFields(params, snapshot, typed.value)
  if ('error' in shown) return { kind: 'error', error: shown.error }
  if ('forward' in shown) return forward(shown.forward)

  const query: ListQuery = {
    types: typed.value.types,
    specific: typed.value.singleModel,
    filters: fields.value.filters,
    ...tree.value,
    ...locale.value,
    ...ordered.value,
    ...page.value,
    ...shown.value,
  }
  // Equal keys (or none) are put in order by the database: only the CMS knows its choice.
  if (query.order !== undefined && !orderIsTotal(selectPages(snapshot, { ...query, order: undefined }), query.order)) {
    return forward('the database orders equal values')
  }
  return { kind: 'index', query }
}
