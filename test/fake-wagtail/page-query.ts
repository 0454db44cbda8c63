/**
 * Wagtail's queryset pipeline for the pages endpoint, in its fixed order (docs/wagtail-compatibility.md#validation-order): `type` →
 * `site` → unknown parameters (listing only) → FieldsFilter → child_of → ancestor_of → descendant_of →
 * ordering → translation_of → locale → search. The first failing step wins, so every step validates in
 * that order; the matching itself is done afterwards, cheapest scope first.
 * @module
 */
import { ApiError, ServerError, badRequest } from './api-errors.js'
import { BASE_PAGE_MODEL } from './page-models.js'
import type { FieldKind, PageModel, PageModelRegistry } from './page-models.js'
import { parsePyInt, pyRepr, toSafeNumber } from './python-semantics.js'
import type { QueryDict } from './query-dict.js'
import { visibleDescendants } from './site-index.js'
import type { PageNode, SiteIndex, SiteUrls } from './site-index.js'
import { isLegacyWagtail, type FakePage, type WagtailVersion } from './types.js'

/** `BaseAPIViewSet.known_query_parameters` + `PagesAPIViewSet`'s additions (docs/wagtail-compatibility.md#listing-parameters). */
const KNOWN_PARAMETERS = new Set([
  'limit', 'offset', 'fields', 'order', 'search', 'search_operator', '_', 'format',
  'type', 'child_of', 'ancestor_of', 'descendant_of', 'translation_of', 'locale', 'site',
])

/** Database-backed API fields of `Page` (filterable and orderable, docs/wagtail-compatibility.md#listing-parameters). */
const PAGE_DB_FIELDS = [
  'id', 'title', 'slug', 'show_in_menus', 'seo_title', 'search_description', 'first_published_at', 'alias_of', 'locale',
]

/** API fields that are not database columns: valid `fields=`, but not filters; ordering by them fails. */
const NON_DB_FIELDS = new Set(['type', 'detail_url', 'html_url', 'parent'])

/** Page fields in `Page.search_fields` as `FilterField`s: the only ones usable together with `search`. */
const INDEXED_FIELDS = new Set(['id', 'title', 'show_in_menus', 'first_published_at', 'locale'])

const INT64_MAX = 2n ** 63n - 1n

export type QueryMode = 'listing' | 'detail' | 'find'

export type Scope =
  | { readonly kind: 'all' }
  | { readonly kind: 'children'; readonly parent: PageNode }
  | { readonly kind: 'descendants'; readonly ancestor: PageNode }

export interface CompiledQuery {
  /** The queryset's model: the single `type`, else `Page`. */
  readonly model: PageModel
  /** Exactly one specific type was asked for: pages serialise as that model (docs/wagtail-compatibility.md#response-bodies). */
  readonly specific: boolean
  readonly scope: Scope
  readonly predicates: ReadonlyArray<(node: PageNode) => boolean>
  readonly ordering: readonly OrderKey[] | 'random' | undefined
  /** `search` was given: detail then answers a bare 404 (docs/wagtail-compatibility.md#detail-view). */
  readonly searching: boolean
}

export interface QueryContext {
  readonly index: SiteIndex
  readonly models: PageModelRegistry
  readonly version: WagtailVersion
  readonly urls: SiteUrls
  /** `WAGTAIL_I18N_ENABLED`, and the language codes of the CMS's Locales. */
  readonly i18n: boolean
  readonly locales: readonly string[]
  /** Type-specific API fields that are no database column: not filters, not orders. */
  readonly columnless: ReadonlySet<string>
}

/** Validates `query` in Wagtail's order and returns what selects the matching pages. */
export function compileQuery(query: QueryDict, context: QueryContext, mode: QueryMode): CompiledQuery {
  const { model, typeFilter } = resolveTypes(query, context)
  checkSite(query, context.urls)
  const ownFields = model === BASE_PAGE_MODEL ? [] : model.fields
  const dbFields = [...PAGE_DB_FIELDS, ...ownFields.filter((field) => !context.columnless.has(field))]
  const columnless = ownFields.filter((field) => context.columnless.has(field))
  const predicates: Array<(node: PageNode) => boolean> = []
  if (typeFilter) predicates.push((node) => typeFilter.has(node.model))
  const specific = model !== BASE_PAGE_MODEL
  if (specific) predicates.push((node) => node.model === model)
  const base = { model, specific, searching: false, ordering: undefined, scope: { kind: 'all' } as Scope }
  if (mode === 'find') return { ...base, predicates }

  if (mode === 'listing') checkUnknownParameters(query, dbFields)
  const filteredFields = fieldFilters(query, dbFields, model, context.version, predicates)
  let scope: Scope = { kind: 'all' }
  const childOf = pageParameter(query, 'child_of', context.index, "parent page doesn't exist", true)
  if (childOf) scope = { kind: 'children', parent: childOf }
  const ancestorOf = pageParameter(query, 'ancestor_of', context.index, "descendant page doesn't exist", false)
  if (ancestorOf) predicates.push((node) => node.pre < ancestorOf.pre && ancestorOf.pre < node.end)
  if (query.has('descendant_of')) {
    // Wagtail's ChildOfFilter leaves a mark on the queryset it returns; `ancestor_of` filters it
    // into a new queryset, which does not carry the mark, so only then the two combine.
    if (childOf && !ancestorOf) throw badRequest('filtering by descendant_of with child_of is not supported')
    const ancestor = pageParameter(query, 'descendant_of', context.index, "ancestor page doesn't exist", true)
    if (ancestor && scope.kind === 'children') predicates.push((node) => ancestor.pre < node.pre && node.pre < ancestor.end)
    else if (ancestor) scope = { kind: 'descendants', ancestor }
  }
  const ordering = compileOrdering(query, dbFields, columnless, context.version)
  const original = pageParameter(query, 'translation_of', context.index, "translation_of page doesn't exist", true)
  if (original) {
    // Its translations: the pages sharing its translation key, itself excluded.
    const key = translationKeyOf(original.page)
    predicates.push((node) => node !== original && translationKeyOf(node.page) === key)
  }
  if (query.has('locale')) {
    const code = query.get('locale') as string
    if (!context.locales.includes(code)) throw new ApiError(404, { message: 'No Locale matches the given query.' })
    predicates.push((node) => (node.page.locale ?? 'en') === code)
  }
  const searching = query.has('search')
  if (searching) predicates.push(compileSearch(query, filteredFields, ordering?.fields ?? []))
  return { model, specific, scope, predicates, ordering: ordering?.compare, searching }
}

const translationKeyOf = (page: FakePage): string => page.translationKey ?? `page-${page.id}`

/** The pages a compiled query selects, in result order. */
export function selectPages(compiled: CompiledQuery, index: SiteIndex): PageNode[] {
  let source: readonly PageNode[]
  if (compiled.scope.kind === 'children') source = compiled.scope.parent.children.filter((node) => node.live)
  else if (compiled.scope.kind === 'descendants') source = visibleDescendants(index, compiled.scope.ancestor)
  else source = index.visible
  const { predicates } = compiled
  const pages = predicates.length === 0 ? source.slice() : source.filter((node) => predicates.every((test) => test(node)))
  if (compiled.ordering === 'random') {
    for (let i = pages.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[pages[i], pages[j]] = [pages[j] as PageNode, pages[i] as PageNode]
    }
  } else if (compiled.ordering) {
    return sortPages(pages, compiled.ordering)
  }
  return pages
}

/** Whether one page is in what the query selects (detail view: `get_object_or_404(filter_queryset(…))`). */
export function queryIncludes(compiled: CompiledQuery, node: PageNode): boolean {
  if (!node.live) return false
  const { scope } = compiled
  if (scope.kind === 'children' && node.parent !== scope.parent) return false
  if (scope.kind === 'descendants' && !(scope.ancestor.pre < node.pre && node.pre < scope.ancestor.end)) return false
  return compiled.predicates.every((test) => test(node))
}

/** `offset`/`limit` exactly as `WagtailPagination.paginate_queryset` checks them (docs/wagtail-compatibility.md#pagination-and-default-order). */
export function paginate(query: QueryDict, limitMax: number | null): { offset: number; limit: number } {
  const offset = parsePyInt(query.get('offset') ?? '0')
  if (offset === undefined || offset < 0n) throw badRequest('offset must be a positive integer')
  const limitDefault = limitMax ? Math.min(20, limitMax) : 20
  const limit = parsePyInt(query.get('limit') ?? String(limitDefault))
  if (limit === undefined || limit < 0n) throw badRequest('limit must be a positive integer')
  if (limitMax && limit > BigInt(limitMax)) throw badRequest(`limit cannot be higher than ${limitMax}`)
  // Beyond SQLite's 64-bit integers the slice overflows: Django's 500 page (verified for offset).
  if (offset > INT64_MAX || limit > INT64_MAX) throw new ServerError('integer overflow in LIMIT/OFFSET')
  const cap = BigInt(Number.MAX_SAFE_INTEGER)
  return { offset: Number(offset > cap ? cap : offset), limit: Number(limit > cap ? cap : limit) }
}

function resolveTypes(query: QueryDict, context: QueryContext): { model: PageModel; typeFilter?: Set<PageModel> } {
  const raw = query.get('type') ?? 'wagtailcore.Page'
  if (raw === '') {
    // 5.2+ ignore `type=`; 4.1–5.1 answer 400 (docs/wagtail-compatibility.md#version-and-database-differences).
    if (isLegacyWagtail(context.version)) throw badRequest("type doesn't exist")
    return { model: BASE_PAGE_MODEL }
  }
  const models = raw.split(',').map((name) => context.models.resolve(name))
  if (models.some((model) => model === undefined)) throw badRequest("type doesn't exist")
  const resolved = models as PageModel[]
  if (resolved.length === 1) return { model: resolved[0] as PageModel }
  if (resolved.includes(BASE_PAGE_MODEL)) return { model: BASE_PAGE_MODEL }
  return { model: BASE_PAGE_MODEL, typeFilter: new Set(resolved) }
}

/**
 * `?site=host[:port]`: only the fake's one site exists. Wagtail 7.x lets the `DoesNotExist`/`ValueError`
 * escape → Django 500 (verified for `site=nope` and `site=localhost:abc`).
 */
function checkSite(query: QueryDict, urls: SiteUrls): void {
  // `if "site" in request.GET:` — an empty value is looked up too, and no Site has an empty hostname.
  if (!query.has('site')) return
  const site = query.get('site') ?? ''
  const own = new URL(urls.siteUrl)
  const ownPort = own.port || (own.protocol === 'https:' ? '443' : '80')
  const colon = site.indexOf(':')
  const hostname = colon < 0 ? site : site.slice(0, colon)
  const port = colon < 0 ? undefined : site.slice(colon + 1)
  if (port !== undefined && parsePyInt(port) === undefined) throw new ServerError(`bad site port ${port}`)
  if (hostname !== own.hostname || (port !== undefined && String(parsePyInt(port)) !== ownPort)) {
    throw new ServerError(`no site ${site}`)
  }
}

function checkUnknownParameters(query: QueryDict, dbFields: readonly string[]): void {
  const allowed = new Set([...KNOWN_PARAMETERS, ...dbFields])
  const unknown = query.keys().filter((key) => !allowed.has(key)).sort()
  if (unknown.length > 0) {
    throw badRequest(`query parameter is not an operation or a recognised field: ${unknown.join(', ')}`)
  }
}

/** `parse_boolean` (utils.py): only `true`, `false`, `1`, `0`, case-sensitive. */
function parseBoolean(value: string): boolean | string {
  if (value === 'true' || value === '1') return true
  if (value === 'false' || value === '0') return false
  return `expected 'true' or 'false', got '${value}'`
}

function fieldError(value: string, field: string, reason: string): ApiError {
  return badRequest(`field filter error. '${value}' is not a valid value for ${field} (${reason})`)
}

/**
 * `FieldsFilter`: every query key that is a database field (except `locale`, which has its own filter),
 * in query-string order, converted like Django would (docs/wagtail-compatibility.md#field-filters). Returns the filtered field names.
 */
function fieldFilters(
  query: QueryDict,
  dbFields: readonly string[],
  model: PageModel,
  version: WagtailVersion,
  predicates: Array<(node: PageNode) => boolean>,
): string[] {
  const filterable = new Set(dbFields.filter((field) => field !== 'locale'))
  const applied: string[] = []
  for (const [field, value] of query.items()) {
    if (!filterable.has(field)) continue
    applied.push(field)
    predicates.push(fieldPredicate(field, value, model.kinds.get(field), version))
  }
  return applied
}

function fieldPredicate(field: string, value: string, extraKind: FieldKind | undefined, version: WagtailVersion): (node: PageNode) => boolean {
  const kind: FieldKind | 'datetime' | 'foreign-key' =
    field === 'id' ? 'integer'
    : field === 'show_in_menus' ? 'boolean'
    : field === 'alias_of' ? 'foreign-key'
    : field === 'first_published_at' ? 'datetime'
    : (extraKind ?? 'other')

  if (kind === 'boolean') {
    const parsed = parseBoolean(value)
    if (typeof parsed === 'string') throw fieldError(value, field, parsed)
    return (node) => booleanOf(node, field) === parsed
  }
  if (kind === 'integer' || kind === 'foreign-key') {
    const parsed = parsePyInt(value)
    if (parsed === undefined) {
      throw fieldError(value, field, kind === 'integer'
        ? `invalid literal for int() with base 10: ${pyRepr(value)}`
        : `Field 'id' expected a number but got ${pyRepr(value)}.`)
    }
    // Past 64 bits the database cannot take the number: Django 5 turns an `id` lookup into an
    // empty result, but a foreign key's, and any lookup on older versions, fail with a 500.
    if ((kind === 'foreign-key' || isLegacyWagtail(version)) && (parsed > 2n ** 63n - 1n || parsed < -(2n ** 63n))) {
      throw new ServerError(`integer out of range for ${field}`)
    }
    // Out-of-range integers match nothing (Django 5 turns the lookup into an empty result).
    const wanted = toSafeNumber(parsed)
    if (wanted === undefined) return () => false
    return (node) => valueOf(node, field) === wanted
  }
  if (value.includes('\0')) {
    // 6.2+ reject NUL; older versions pass it to the database (a 500 on PostgreSQL) — docs/wagtail-compatibility.md#version-and-database-differences.
    if (version === '5.1') throw new ServerError('NUL in filter value')
    if (version === '4.1') return () => false
    throw badRequest(`field filter error. null characters are not allowed for ${field}`)
  }
  if (kind === 'datetime') {
    const wanted = parseDjangoDatetime(value)
    if (wanted === undefined) throw new ServerError(`invalid datetime ${value}`)
    return (node) => node.publishedMicros === wanted
  }
  if (kind === 'date') {
    const wanted = parseDjangoDate(value)
    if (wanted === undefined) throw new ServerError(`invalid date ${value}`)
    return (node) => valueOf(node, field) === wanted
  }
  return (node) => {
    const actual = valueOf(node, field)
    if (typeof actual === 'string') return actual === value
    if (typeof actual === 'number') return value.trim() !== '' && Number(value) === actual
    return false
  }
}

function booleanOf(node: PageNode, field: string): boolean | undefined {
  const actual = valueOf(node, field)
  return typeof actual === 'boolean' ? actual : undefined
}

/** A page's value of a database field (generic or type-specific), for filtering and ordering. */
function valueOf(node: PageNode, field: string): unknown {
  const { page } = node
  switch (field) {
    case 'id': return page.id
    case 'title': return page.title
    case 'slug': return page.slug
    case 'show_in_menus': return page.showInMenus
    case 'seo_title': return page.seoTitle
    case 'search_description': return page.searchDescription
    case 'first_published_at': return node.publishedMicros
    case 'alias_of': return page.aliasOf ?? null
    case 'locale': return page.locale ?? 'en'
    default: return page.extra?.[field] ?? null
  }
}

/**
 * Django `DateTimeField.to_python` for a string: `parse_datetime`, else `parse_date` (midnight); naive
 * values are in the current time zone (UTC). `undefined` = ValidationError (uncaught → 500, verified).
 */
function parseDjangoDatetime(text: string): number | undefined {
  const match =
    /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,](\d{1,6})\d{0,6})?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?$/.exec(text)
  if (!match) return undefined
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', tz = 'Z'] = match
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s)
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined
  const ms = Date.UTC(year, month - 1, day, hour, minute, second)
  if (new Date(ms).getUTCDate() !== day) return undefined
  let offsetMinutes = 0
  if (tz !== 'Z') {
    const digits = tz.slice(1).replace(':', '')
    offsetMinutes = (tz[0] === '-' ? -1 : 1) * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0'))
  }
  return (ms - offsetMinutes * 60_000) * 1000 + Number(frac.padEnd(6, '0'))
}

/** Django `DateField.to_python` (`parse_date`): `YYYY-M-D` → normalised `YYYY-MM-DD`, else a 500. */
function parseDjangoDate(text: string): string | undefined {
  const match = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(text)
  if (!match) return undefined
  const [, y, m, d] = match as unknown as [string, string, string, string]
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
  if (date.getUTCMonth() !== Number(m) - 1 || date.getUTCDate() !== Number(d)) return undefined
  return `${y}-${m.padStart(2, '0')}-${d.padStart(2, '0')}`
}

/**
 * child_of / ancestor_of / descendant_of / translation_of: Python `int()`, negative → "must be a positive
 * integer" unless the value is `root` (where allowed: the site root); the page must be in the visible base
 * queryset, else `missing` (docs/wagtail-compatibility.md#tree-filters).
 */
function pageParameter(query: QueryDict, name: string, index: SiteIndex, missing: string, allowRoot: boolean): PageNode | undefined {
  if (!query.has(name)) return undefined
  const raw = query.get(name) as string
  const parsed = parsePyInt(raw)
  if (parsed === undefined || parsed < 0n) {
    if (allowRoot && raw === 'root' && index.root) return index.root
    throw badRequest(`${name} must be a positive integer`)
  }
  const id = toSafeNumber(parsed)
  const node = id === undefined ? undefined : index.byId.get(id)
  if (!node || !node.live) throw badRequest(missing)
  return node
}

export interface OrderKey {
  readonly field: string
  readonly descending: boolean
}

interface Ordering {
  readonly compare: readonly OrderKey[] | 'random'
  /** Field names ordered by (without `-`), for the search index check. */
  readonly fields: readonly string[]
}

/**
 * `OrderingFilter` (docs/wagtail-compatibility.md#ordering). 7.1+: comma lists, a `-` per field, empty = none, non-DB fields → 400.
 * 5.2–7.0: comma lists where only the last field's `-` counts and reverses everything, messages without
 * the `-`, `order=` → 400, non-DB fields → 500. ≤5.1: a single field name.
 */
function compileOrdering(query: QueryDict, dbFields: readonly string[], columnless: readonly string[], version: WagtailVersion): Ordering | undefined {
  if (!query.has('order')) return undefined
  const raw = query.get('order') as string
  const orderable = new Set(dbFields)
  const unknown = (name: string): ApiError => badRequest(`cannot order by '${name}' (unknown field)`)
  const names = isLegacyWagtail(version) ? [raw] : raw.split(',')
  if (names.includes('random')) {
    if (names.length > 1) throw badRequest('random ordering cannot be combined with other fields')
    if (query.has('offset')) throw badRequest('random ordering with offset is not supported')
    return { compare: 'random', fields: [] }
  }

  if (version === '7.4') {
    if (raw === '') return undefined
    const keys = names.map((name) => {
      const descending = name.startsWith('-')
      const field = descending ? name.slice(1) : name
      if (!orderable.has(field)) throw unknown(name)
      return { field, descending }
    })
    return { compare: keys, fields: keys.map((key) => key.field) }
  }

  const reverseAll = (names[names.length - 1] as string).startsWith('-')
  const fields = names.map((name) => (name.startsWith('-') ? name.slice(1) : name))
  for (const field of fields) {
    if (NON_DB_FIELDS.has(field) || columnless.includes(field)) throw new ServerError(`FieldError: cannot resolve keyword ${field}`)
    if (!orderable.has(field)) throw unknown(field)
  }
  return { compare: fields.map((field) => ({ field, descending: reverseAll })), fields }
}

/**
 * SQLite semantics: NULL sorts first ascending; ties fall back to id order (as the probes show). Each key
 * is read once per page into a numeric column (values or dense ranks), so comparisons stay cheap
 * (≈80 ms for 100,000 pages; tree-order listings do not sort at all).
 */
function sortPages(pages: readonly PageNode[], keys: readonly OrderKey[]): PageNode[] {
  const columns = keys.map((key) => rankColumn(pages.map((node) => valueOf(node, key.field))))
  const signs = keys.map((key) => (key.descending ? -1 : 1))
  const ids = pages.map((node) => node.id)
  const order = pages.map((_, i) => i)
  order.sort((a, b) => {
    for (let k = 0; k < columns.length; k++) {
      const column = columns[k] as Float64Array
      const difference = (column[a] as number) - (column[b] as number)
      if (difference !== 0) return (signs[k] as number) * difference
    }
    return (ids[a] as number) - (ids[b] as number)
  })
  return order.map((i) => pages[i] as PageNode)
}

/** A `DateTimeField`'s value as DRF writes it (always with its offset). */
const AWARE_DATETIME = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)$/

/** An aware datetime's instant in µs (a `DateTimeField` column orders by it, whatever the offset written). */
function instantMicros(text: string): number | undefined {
  const match = AWARE_DATETIME.exec(text)
  if (!match) return undefined
  const [, day, time, fraction = '', zone] = match as unknown as [string, string, string, string | undefined, string]
  const ms = Date.parse(`${day}T${time}${zone === 'Z' ? 'Z' : zone}`)
  return Number.isNaN(ms) ? undefined : ms * 1000 + Number(fraction.padEnd(6, '0'))
}

/**
 * Numbers and booleans keep their value (NULL = −∞), and so do datetime columns, as instants;
 * other columns become dense ranks (NULL = −1).
 */
function rankColumn(values: readonly unknown[]): Float64Array {
  const instants = values.map((value) => (typeof value === 'string' ? instantMicros(value) : undefined))
  if (values.some((value) => value !== null) && values.every((value, i) => value === null || instants[i] !== undefined)) {
    return Float64Array.from(instants, (instant) => instant ?? -Infinity)
  }
  const ranks = new Float64Array(values.length)
  if (values.every((value) => value === null || typeof value === 'number' || typeof value === 'boolean')) {
    for (let i = 0; i < values.length; i++) {
      const value = values[i]
      ranks[i] = value === null ? -Infinity : Number(value)
    }
    return ranks
  }
  const distinct = [...new Set(values)].filter((value) => value !== null)
  // Plain string columns sort natively (code-unit order); mixed ones use the general comparison.
  if (distinct.every((value) => typeof value === 'string')) (distinct as string[]).sort()
  else distinct.sort(compareValues)
  const rankOf = new Map<unknown, number>()
  distinct.forEach((value, i) => rankOf.set(value, i))
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    ranks[i] = value === null ? -1 : (rankOf.get(value) as number)
  }
  return ranks
}

function rank(value: unknown): number {
  if (value === null || value === undefined) return 0
  if (typeof value === 'boolean' || typeof value === 'number') return 1
  if (typeof value === 'string') return 2
  return 3
}

function compareValues(a: unknown, b: unknown): number {
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  if (ra === 0) return 0
  if (ra === 1) return Number(a) - Number(b)
  const sa = ra === 2 ? (a as string) : JSON.stringify(a)
  const sb = ra === 2 ? (b as string) : JSON.stringify(b)
  return sa < sb ? -1 : sa > sb ? 1 : 0
}

/**
 * `SearchFilter` with the database backend: filters and ordering must use indexed fields (docs/wagtail-compatibility.md#error-texts), the
 * operator must be `and`/`or` (else an uncaught error → 500, verified). Matching is a case-insensitive
 * substring test of the title per term; an empty query matches nothing (verified `search=` → 0).
 */
function compileSearch(query: QueryDict, filteredFields: readonly string[], orderedFields: readonly string[]): (node: PageNode) => boolean {
  const search = query.get('search') as string
  // An empty query short-cuts to no results before the backend sees the operator; the backend
  // lower-cases the operator and defaults an empty one (`operator or 'or'`).
  const operator = search === '' ? 'or' : (query.get('search_operator') || 'or').toLowerCase()
  if (operator !== 'and' && operator !== 'or') throw new ServerError(`bad search operator ${operator}`)
  for (const field of filteredFields) {
    if (!INDEXED_FIELDS.has(field)) throw badRequest(`cannot filter by '${field}' while searching (field is not indexed)`)
  }
  for (const field of orderedFields) {
    if (!INDEXED_FIELDS.has(field)) throw badRequest(`cannot order by '${field}' while searching (field is not indexed)`)
  }
  const terms = search.toLowerCase().split(/\s+/).filter((term) => term !== '')
  // Only an empty query short-cuts; one of nothing but whitespace reaches the backend, which fails.
  if (terms.length === 0 && search !== '') throw new ServerError('a search of only whitespace')
  if (terms.length === 0) return () => false
  if (operator === 'or') return (node) => terms.some((term) => node.page.title.toLowerCase().includes(term))
  return (node) => terms.every((term) => node.page.title.toLowerCase().includes(term))
}
