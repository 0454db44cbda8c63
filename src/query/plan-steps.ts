/**
 * The steps a Wagtail pages view runs, in its order (docs/wagtail-compatibility.md#validation-order: `get_queryset` → filter backends →
 * pagination → serializer), each deciding locally when the snapshot knows enough and asking for
 * the CMS when it does not. The first step that fails wins, as in Wagtail.
 * @module
 */
import type { DateKind, Dialect, Snapshot } from '../tree/snapshot.js'
import { localesOf } from '../tree/page-meta.js'
import { translationsOf } from '../tree/translations.js'
import { NOTHING_KNOWN_ABSENT, typeKey, type KnownAbsent } from './known-absent.js'
import { djangoDateTime } from './django-datetime.js'
import { pythonInt } from './python-int.js'
import { pythonRepr } from './python-repr.js'
import type { QueryParams } from './query-params.js'
import type { PageFilters, PageOrder } from '../tree/page-selection.js'
import { booleanReason, foreignKeyReason, wagtailErrors, type WagtailError } from './wagtail-messages.js'

/** A step either fails (error), needs the CMS (forward), or passes with a value. */
export type Step<T> = { error: WagtailError } | { forward: string } | { value: T }

export const BASE_PAGE_TYPE = 'wagtailcore.Page'

export interface TypeChoice {
  /** `null` = every page. */
  readonly types: ReadonlySet<string> | null
  /** The queryset's model name, for "No <Model> matches the given query." */
  readonly modelName: string
  /** Exactly one concrete model: its model-specific fields become valid parameters. */
  readonly singleModel: boolean
}

/**
 * `get_queryset()`: `type=app.Model[,app.Model…]`. The app label is exact, the model name
 * case-insensitive (Django's `apps.get_model`). A type the snapshot has not seen may still
 * exist in the CMS (a model with no live pages), so only the CMS can say, unless it already
 * said so under this snapshot (`known`). Any name that does not resolve fails the whole list
 * with the same 400, so which one is found first does not matter.
 */
export function resolveTypes(params: QueryParams, snapshot: Snapshot, known: KnownAbsent = NOTHING_KNOWN_ABSENT): Step<TypeChoice> {
  const raw = params.get('type')
  const all: TypeChoice = { types: null, modelName: 'Page', singleModel: false }
  if (raw === undefined) return { value: all }
  if (raw === '') return snapshot.dialect.emptyTypeIgnored ? { value: all } : { error: wagtailErrors.typeDoesNotExist }
  const canonical: string[] = []
  let unknown = false
  for (const name of raw.split(',')) {
    // resolve_model_string raises ValueError unless the string is exactly `app.Model`.
    const key = typeKey(name)
    if (key === undefined || known.hasType(key)) return { error: wagtailErrors.typeDoesNotExist }
    const found = canonicalType(key, snapshot)
    if (found === undefined) unknown = true
    else canonical.push(found)
  }
  if (unknown) return { forward: 'type unknown to the snapshot' }
  if (canonical.length === 1) {
    const only = canonical[0]!
    if (only === BASE_PAGE_TYPE) return { value: all }
    return { value: { types: new Set(canonical), modelName: only.split('.')[1]!, singleModel: true } }
  }
  return { value: { types: new Set(canonical), modelName: 'Page', singleModel: false } }
}

/** The type name the snapshot's pages carry for a `typeKey`, if any page has it. */
function canonicalType(key: string, snapshot: Snapshot): string | undefined {
  const found = key === 'wagtailcore.page' ? BASE_PAGE_TYPE : snapshot.types.get(key)
  // The snapshot's keys are lower-cased whole; the app label must match exactly.
  return found !== undefined && found.split('.')[0] === key.split('.')[0] ? found : undefined
}

/**
 * The `typeKey`s of the `type` names no page in the snapshot has: what the CMS decides when
 * `resolveTypes` forwards. `undefined` when `type` is absent, empty, or names a malformed type.
 */
export function typesUnknownToSnapshot(params: QueryParams, snapshot: Snapshot): string[] | undefined {
  const raw = params.get('type')
  if (raw === undefined || raw === '') return undefined
  const unknown = new Set<string>()
  for (const name of raw.split(',')) {
    const key = typeKey(name)
    if (key === undefined) return undefined
    if (canonicalType(key, snapshot) === undefined) unknown.add(key)
  }
  return [...unknown]
}

/** A Site hostname is a CharField(max_length=255) that forms never let hold a NUL or be empty. */
const SITE_HOSTNAME_MAX = 255

/**
 * `get_base_queryset`'s `?site=host[:port]` (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500). Only the CMS knows its Sites, so a
 * plausible value goes to it; what no Site can match is answered here with Wagtail 8.0's texts,
 * because 7.x lets the lookup's exception escape as an HTML 500.
 */
export function siteFilter(params: QueryParams): Step<void> {
  const raw = params.get('site')
  if (raw === undefined) return { value: undefined }
  const colon = raw.indexOf(':')
  const hostname = colon < 0 ? raw : raw.slice(0, colon)
  if (colon >= 0) {
    // Django converts the port before the query runs: IntegerField.get_prep_value's ValueError.
    const port = raw.slice(colon + 1)
    if (!pythonInt(port).ok) return { error: wagtailErrors.sitePortInvalid(pythonRepr(port)) }
  }
  if (hostname === '' || hostname.includes('\u0000') || Array.from(hostname).length > SITE_HOSTNAME_MAX) {
    return { error: wagtailErrors.siteNotFound }
  }
  return { forward: 'site is answered by the CMS' }
}

/** `get_base_queryset`'s own steps, in its order: `type`, then `site` (docs/wagtail-compatibility.md#validation-order). */
export function baseQueryset(params: QueryParams, snapshot: Snapshot, known?: KnownAbsent): Step<TypeChoice> {
  const typed = resolveTypes(params, snapshot, known)
  if (!('value' in typed)) return typed
  const site = siteFilter(params)
  return 'value' in site ? typed : site
}

/** Why a query goes to the CMS when `key` is the first step only the CMS can run. */
export function answeredByTheCms(key: string): string {
  return `${key} is answered by the CMS`
}

/** Parameters that need the CMS whenever present, each at its place in Wagtail's order. */
/**
 * LocaleFilter (docs/wagtail-compatibility.md#translations): a language code some page of the
 * snapshot carries is a Locale the CMS has, and filters here; any other goes to the CMS, which
 * alone knows whether such a Locale exists (a 404) or has no page on this Site (an empty list).
 */
export function localeFilter(params: QueryParams, snapshot: Snapshot): Exclude<Step<{ locale?: string }>, { error: WagtailError }> {
  const locale = params.get('locale')
  if (locale === undefined) return { value: {} }
  return localesOf(snapshot).has(locale) ? { value: { locale } } : { forward: answeredByTheCms('locale') }
}

/**
 * The date fields of the one model a typed listing names that OrderingFilter takes
 * (`Dialect.dateOrders`); none for a listing of several types or of all, whose model is `Page`.
 */
export function typeDateOrders(snapshot: Snapshot, typed: TypeChoice): Readonly<Record<string, DateKind>> | undefined {
  if (!typed.singleModel || typed.types === null) return undefined
  const [type] = typed.types
  return snapshot.dialect.dateOrders?.[type!]
}

/**
 * OrderingFilter (docs/wagtail-compatibility.md#ordering): one field the snapshot holds for every
 * page, `id` or `first_published_at`, or one of the typed model's own date fields the CMS was
 * seen to order by (`dates`), either way round. Anything else (other fields, several, `random`, an
 * empty or unknown one) is the CMS's, whose answers and errors differ by version.
 */
export function orderStep(params: QueryParams, dates?: Readonly<Record<string, DateKind>>): Exclude<Step<{ order?: PageOrder }>, { error: WagtailError }> {
  const order = params.get('order')
  if (order === undefined) return { value: {} }
  const descending = order.startsWith('-')
  const field = descending ? order.slice(1) : order
  if (field === 'id' || field === 'first_published_at') return { value: { order: { field, descending } } }
  const kind = dates !== undefined && Object.hasOwn(dates, field) ? dates[field] : undefined
  if (kind === undefined) return { forward: answeredByTheCms('order') }
  return { value: { order: { field, descending, kind } } }
}

/**
 * TranslationOfFilter (docs/wagtail-compatibility.md#translations): ChildOfFilter's rules for the
 * id (`root` is the Site's root), then the page's other translations, from the groups the sync
 * learned; the CMS answers when the snapshot has none (`translationsOf`).
 */
export function translationOfFilter(params: QueryParams, snapshot: Snapshot): Step<{ translationOf?: number }> {
  const raw = params.get('translation_of')
  if (raw === undefined) return { value: {} }
  let id: number | undefined
  const parsed = pythonInt(raw)
  if (!parsed.ok || parsed.value < 0n) {
    if (raw !== 'root') return { error: wagtailErrors.positiveInteger('translation_of') }
    id = snapshot.rootId
  } else {
    id = toPageId(parsed.value)
    if (id === undefined || !snapshot.byId.has(id)) return { error: wagtailErrors.translationOfMissing }
  }
  return translationsOf(snapshot) === undefined ? { forward: answeredByTheCms('translation_of') } : { value: { translationOf: id } }
}

/**
 * The filter backends after OrderingFilter, in Wagtail's order: TranslationOfFilter
 * (`translationOfFilter`), LocaleFilter (a language the snapshot knows, `localeFilter`),
 * SearchFilter (the CMS's).
 */
export function translationLocaleSearch(params: QueryParams, snapshot: Snapshot): Step<{ locale?: string; translationOf?: number }> {
  const translations = translationOfFilter(params, snapshot)
  if (!('value' in translations)) return translations
  const locale = localeFilter(params, snapshot)
  if ('forward' in locale) return locale
  const searched = forwardIfPresent(params, ['search'])
  return 'forward' in searched ? searched : { value: { ...translations.value, ...locale.value } }
}

export function forwardIfPresent(params: QueryParams, keys: readonly string[]): Step<void> {
  for (const key of keys) if (params.has(key)) return { forward: answeredByTheCms(key) }
  return { value: undefined }
}

/** The generic, database-backed fields FieldsFilter accepts (`locale` has its own filter). */
export const FILTER_FIELDS = [
  'id',
  'title',
  'slug',
  'show_in_menus',
  'seo_title',
  'search_description',
  'first_published_at',
  'alias_of',
] as const

/** FieldsFilter converts these before filtering: `parse_boolean`, `int()`, the FK's `get_prep_value`. */
const CONVERTED_FIELDS = new Set(['id', 'show_in_menus', 'alias_of'])

const STRING_FILTERS = {
  title: 'title',
  slug: 'slug',
  seo_title: 'seoTitle',
  search_description: 'searchDescription',
} as const

/**
 * FieldsFilter: every filter field in query order (first appearance, last value), converted as
 * Django would; the first bad value is the error. `first_published_at` and `alias_of` are
 * validated here but filtered by the CMS.
 */
export function fieldFilters(params: QueryParams, dialect: Pick<Dialect, 'nulInTextFilter'>): Step<{ filters: PageFilters; needsCms: boolean }> {
  const filters: { -readonly [K in keyof PageFilters]: PageFilters[K] } = {}
  let needsCms = false
  const fields = new Set<string>(FILTER_FIELDS)
  for (const [key, value] of params.items()) {
    if (!fields.has(key)) continue
    // Booleans, integers and foreign keys are converted first, so a NUL fails their conversion;
    // the NUL check (6.2+) guards only the values passed to the database as text. Older versions
    // pass it on, and the equality below then matches no page, as the CMS's own database did.
    if (value.includes('\u0000') && !CONVERTED_FIELDS.has(key) && dialect.nulInTextFilter === 'refused') {
      return { error: wagtailErrors.fieldFilterNul(key) }
    }
    if (key === 'id') {
      const parsed = pythonInt(value)
      if (!parsed.ok) return { error: wagtailErrors.fieldFilterInvalid(value, key, parsed.message) }
      filters.id = toPageId(parsed.value) ?? -1
    } else if (key === 'show_in_menus') {
      if (value === 'true' || value === '1') filters.showInMenus = true
      else if (value === 'false' || value === '0') filters.showInMenus = false
      else return { error: wagtailErrors.fieldFilterInvalid(value, key, booleanReason(value)) }
    } else if (key === 'alias_of') {
      if (!pythonInt(value).ok) {
        return { error: wagtailErrors.fieldFilterInvalid(value, key, foreignKeyReason(pythonRepr(value))) }
      }
      needsCms = true
    } else if (key === 'first_published_at') {
      // Wagtail lets Django's ValidationError escape (an HTML 500, docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500): refuse it here in
      // FieldsFilter's frame, with Django's text. A parsable value is filtered by the CMS.
      const verdict = djangoDateTime(value)
      if (verdict.kind === 'invalid') return { error: wagtailErrors.fieldFilterInvalid(value, key, verdict.message) }
      needsCms = true
    } else {
      filters[STRING_FILTERS[key as keyof typeof STRING_FILTERS]] = value
    }
  }
  return { value: { filters, needsCms } }
}

/** A parsed id as a page id, or undefined when no page can have it. */
export function toPageId(value: bigint): number | undefined {
  return value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined
}

/**
 * ChildOfFilter / DescendantOfFilter / AncestorOfFilter's id parsing: Python int, not negative,
 * `root` for the site root where the filter allows it, and the page must be visible.
 */
function pageParam(
  params: QueryParams,
  key: 'child_of' | 'descendant_of' | 'ancestor_of',
  snapshot: Snapshot,
  missing: WagtailError,
): Step<number | undefined> {
  const raw = params.get(key)
  if (raw === undefined) return { value: undefined }
  const parsed = pythonInt(raw)
  if (!parsed.ok || parsed.value < 0n) {
    if (raw === 'root' && key !== 'ancestor_of') return { value: snapshot.rootId }
    // AncestorOfFilter has no `root`: Wagtail 4.1 and 7.x both answer it as any other non-integer.
    return { error: wagtailErrors.positiveInteger(key) }
  }
  const id = toPageId(parsed.value)
  if (id === undefined || !snapshot.byId.has(id)) return { error: missing }
  return { value: id }
}

export interface TreeFilters {
  readonly childOf?: number
  readonly ancestorOf?: number
  readonly descendantOf?: number
}

/** `treeFilters`' forward when `ancestor_of`/`descendant_of` were validated but cannot be applied here. */
export const TREE_NOT_EXACT = 'tree has pages whose parent is not visible'

/** The three tree filters in Wagtail's backend order: child_of, ancestor_of, descendant_of. */
export function treeFilters(params: QueryParams, snapshot: Snapshot): Step<TreeFilters> {
  const childOf = pageParam(params, 'child_of', snapshot, wagtailErrors.parentPageMissing)
  if (!('value' in childOf)) return childOf
  const ancestorOf = pageParam(params, 'ancestor_of', snapshot, wagtailErrors.ancestorOfMissing)
  if (!('value' in ancestorOf)) return ancestorOf
  // ChildOfFilter marks the queryset it returns, and DescendantOfFilter refuses a marked one. The
  // mark is an attribute on that queryset object: AncestorOfFilter's `.ancestor_of()` returns a new
  // queryset without it, so with `ancestor_of` given the three filters simply combine.
  if (params.has('descendant_of') && childOf.value !== undefined && !params.has('ancestor_of')) {
    return { error: wagtailErrors.descendantOfWithChildOf }
  }
  const descendantOf = pageParam(params, 'descendant_of', snapshot, wagtailErrors.descendantOfMissing)
  if (!('value' in descendantOf)) return descendantOf
  // Ancestry from parent links is exact only when the tree has no orphans (see Snapshot.treeExact).
  if (!snapshot.treeExact && (ancestorOf.value !== undefined || descendantOf.value !== undefined)) {
    return { forward: TREE_NOT_EXACT }
  }
  const value: { -readonly [K in keyof TreeFilters]: TreeFilters[K] } = {}
  if (childOf.value !== undefined) value.childOf = childOf.value
  if (ancestorOf.value !== undefined) value.ancestorOf = ancestorOf.value
  if (descendantOf.value !== undefined) value.descendantOf = descendantOf.value
  return { value }
}

/** WagtailPagination: offset first, then limit, then limit against the CMS's maximum (docs/wagtail-compatibility.md#pagination-and-default-order). */
export function pagination(params: QueryParams, snapshot: Snapshot): Step<{ offset: number; limit: number }> {
  const limitMax = snapshot.dialect.limitMax
  let offset = 0
  const rawOffset = params.get('offset')
  if (rawOffset !== undefined) {
    const parsed = pythonInt(rawOffset)
    if (!parsed.ok || parsed.value < 0n) return { error: wagtailErrors.positiveInteger('offset') }
    // Past the end is simply an empty page; no need to keep a bigint around.
    offset = parsed.value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(parsed.value)
  }
  let limit = limitMax ? Math.min(20, limitMax) : 20
  const rawLimit = params.get('limit')
  if (rawLimit !== undefined) {
    const parsed = pythonInt(rawLimit)
    if (!parsed.ok || parsed.value < 0n) return { error: wagtailErrors.positiveInteger('limit') }
    if (limitMax && parsed.value > BigInt(limitMax)) return { error: wagtailErrors.limitTooHigh(limitMax) }
    limit = parsed.value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(parsed.value)
  }
  return { value: { offset, limit } }
}
