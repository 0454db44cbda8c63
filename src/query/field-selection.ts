/**
 * `?fields=` decided from a stored detail (docs/wagtail-compatibility.md#detail-fields). A page
 * type's detail holds every one of its fields (`locale` only with i18n), in the serializer's order,
 * so what a selection shows is some of the stored members: on the detail itself, or in a listing's
 * items (which start from the listing's defaults and never show `parent`). `locale`, which the
 * stored detail holds only with i18n, is written from the one language every page has when the
 * sync learned it (`Dialect.unlistedLocale`). `alias_of(…)` shows the nested page with its
 * default fields, whatever the sub-fields say, as Wagtail does. What the snapshot cannot decide
 * goes to the CMS: `locale` where neither holds it, sub-fields a nested page's serializer may
 * refuse, sub-fields of any other field (a relation or an error only the model knows). Pure.
 * @module
 */
import type { ObjectNode } from '../json/json-spans.js'
import type { MemberSelection } from '../json/select-members.js'
import type { FieldSpec } from './fields-parameter.js'
import { jsonString } from '../json/json-text.js'
import { wagtailErrors, type WagtailError } from './wagtail-messages.js'

/** A page type's fields as its stored detail has them, in order. */
export interface StoredFields {
  readonly body: readonly string[]
  readonly meta: readonly string[]
}

export type ChosenFields =
  /** The view's defaults: the stored detail, or the stored listing items, as they are. */
  | { readonly kind: 'default' }
  /**
   * Names of the stored body and meta members to show, in order; `locale`'s value as JSON text
   * when it is shown but not stored (the last meta member).
   */
  | { readonly kind: 'select'; readonly body: readonly string[]; readonly meta: readonly string[]; readonly locale?: string }
  | { readonly kind: 'error'; readonly error: WagtailError }
  | { readonly kind: 'forward'; readonly reason: string }

/**
 * The fields a nested page's serializer takes: the pages endpoint's own, less the detail-only
 * `parent`. Wagtail checks `alias_of(…)`'s sub-fields against them, then writes the nested page
 * with its default fields whatever they say (`PageAliasOfField`, the same 4.1 → 7.4).
 */
const NESTED_FIELDS: ReadonlySet<string> = new Set(['id', 'title', 'type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title',
  'search_description', 'first_published_at', 'alias_of', 'locale'])
/** A listing item's default fields (`listing_default_fields`; `locale` too with i18n). */
const LISTING_DEFAULTS: readonly string[] = ['id', 'type', 'detail_url', 'title', 'html_url', 'slug', 'first_published_at']
/** Only on a detail (`detail_only_fields`). */
const DETAIL_ONLY = 'parent'
/** The page's field that is a relation to another page, nested with its default fields. */
const PAGE_RELATION = 'alias_of'
/** Fields of every page that are no relation (`parent` and the meta fields are no model fields at all). */
const NOT_RELATIONS: ReadonlySet<string> = new Set(['id', 'title', 'type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title',
  'search_description', 'first_published_at', 'parent'])

const DEFAULT: ChosenFields = Object.freeze({ kind: 'default' })

/** Python's `sorted()` on str: by code point. */
function byCodePoint(a: string, b: string): number {
  const [x, y] = [Array.from(a, (c) => c.codePointAt(0)!), Array.from(b, (c) => c.codePointAt(0)!)]
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return x.length - y.length
}

/** The names a configuration selects, starting from `defaults` (`*`: all, `_`: none), and every name it mentions. */
function applyConfig(config: readonly FieldSpec[], defaults: Iterable<string>, all: readonly string[]): { selected: Set<string>; mentioned: Set<string>; sub: Map<string, readonly FieldSpec[]> } {
  const head = config[0]?.name
  const selected = new Set(head === '*' ? all : head === '_' ? [] : defaults)
  const mentioned = new Set<string>()
  const sub = new Map<string, readonly FieldSpec[]>()
  for (const spec of head === '*' || head === '_' ? config.slice(1) : config) {
    if (spec.negated) selected.delete(spec.name)
    else {
      selected.add(spec.name)
      if (spec.sub !== null && spec.sub.length > 0) sub.set(spec.name, spec.sub)
    }
    mentioned.add(spec.name)
  }
  return { selected, mentioned, sub }
}

/**
 * Whether a nested page's serializer takes these sub-fields without an error: names it has, none
 * with sub-fields of its own. Anything else is an error whose place among the view's other checks
 * only the CMS gives.
 */
function nestedFieldsTaken(config: readonly FieldSpec[]): boolean {
  return config.every((spec) => (spec.name === '*' || spec.name === '_' || NESTED_FIELDS.has(spec.name)) && (spec.sub === null || spec.sub.length === 0))
}

/** The fields a stored detail holds. */
export function storedFields(detail: ObjectNode): StoredFields {
  const metaNode = detail.entries.find((entry) => entry.key === 'meta')?.value
  return {
    body: detail.entries.filter((entry) => entry.key !== 'meta').map((entry) => entry.key),
    meta: metaNode?.kind === 'object' ? metaNode.entries.map((entry) => entry.key) : [],
  }
}

/**
 * Wagtail's checks of sub-fields, made on the shown fields in a set's order: `'x' does not support
 * nested fields` for a field that is no relation, and the nested page's own checks for `alias_of`.
 * Decided here when at most one of them can fail; `undefined`: all pass.
 */
function nestedChecks(sub: ReadonlyMap<string, readonly FieldSpec[]>, selected: ReadonlySet<string>): ChosenFields | undefined {
  const refused: string[] = []
  for (const [name, config] of sub) {
    if (!selected.has(name)) return { kind: 'forward', reason: `sub-fields of ${name}, which is not shown` }
    if (name === PAGE_RELATION) {
      if (!nestedFieldsTaken(config)) return { kind: 'forward', reason: `sub-fields of ${PAGE_RELATION} its serializer may refuse` }
    } else if (NOT_RELATIONS.has(name)) refused.push(name)
    // `locale` and a type's own field may be relations, with checks only their models know.
    else return { kind: 'forward', reason: `sub-fields of ${name}` }
  }
  if (refused.length > 1) return { kind: 'forward', reason: 'which of several refused sub-fields Wagtail names depends on a set\'s order' }
  return refused.length === 1 ? { kind: 'error', error: wagtailErrors.noNestedFields(refused[0]!) } : undefined
}

/**
 * @param config the parsed `fields` parameter.
 * @param stored the fields the page type's stored detail holds (for a listing of every type, the
 *   generic ones every page has).
 * @param unlistedLocale the language every page has, where the stored detail leaves `locale` out.
 */
export function chooseFields(config: readonly FieldSpec[], stored: StoredFields, view: 'detail' | 'listing', unlistedLocale?: string): ChosenFields {
  const inView = (name: string) => view === 'detail' || name !== DETAIL_ONLY
  const body = stored.body.filter(inView)
  const meta = stored.meta.filter(inView)
  const held = new Set([...body, ...meta])
  // Every page type has `locale`; the stored detail carries it only with i18n.
  const all = held.has('locale') ? [...body, ...meta] : [...body, ...meta, 'locale']
  const defaults = view === 'detail' ? held : LISTING_DEFAULTS.filter((name) => held.has(name)).concat(held.has('locale') ? ['locale'] : [])
  const { selected, mentioned, sub } = applyConfig(config, defaults, all)

  const unknown = [...mentioned].filter((name) => !all.includes(name)).sort(byCodePoint)
  if (unknown.length > 0) return { kind: 'error', error: wagtailErrors.unknownFields(unknown) }
  const addedLocale = !held.has('locale') && selected.has('locale')
  if (addedLocale && unlistedLocale === undefined) return { kind: 'forward', reason: 'locale is not in the stored detail' }
  const nested = nestedChecks(sub, selected)
  if (nested !== undefined) return nested
  const sameAsDefaults = selected.size === new Set(defaults).size && [...defaults].every((name) => selected.has(name))
  if (sameAsDefaults) return DEFAULT
  return {
    kind: 'select',
    body: body.filter((name) => selected.has(name)),
    meta: meta.filter((name) => selected.has(name)),
    ...(addedLocale ? { locale: jsonString(unlistedLocale!) } : {}),
  }
}

/**
 * A detail's members for a selection (`select-members.ts`); `html_url`'s value from `htmlUrl` when
 * given. A `locale` the detail does not store is added last in `meta`, where the serializer writes
 * it (docs/wagtail-compatibility.md#response-bodies).
 */
export function membersOf(chosen: Pick<Extract<ChosenFields, { kind: 'select' }>, 'body' | 'meta' | 'locale'>, htmlUrl?: string): MemberSelection {
  const members = new Map<string, true | { readonly raw: string } | MemberSelection>(chosen.body.map((name) => [name, true]))
  const meta = new Map<string, true | { readonly raw: string } | MemberSelection>(chosen.meta.map((name) => [
    name,
    name === 'html_url' && htmlUrl !== undefined ? { raw: htmlUrl } : true,
  ]))
  if (chosen.locale !== undefined) meta.set('locale', { raw: chosen.locale })
  // An empty meta is left out altogether, as the serializer does.
  if (meta.size > 0) members.set('meta', meta)
  return members
}

/** The fields every page type has, in the serializer's order: what a listing of several types (or of all) may show. */
const GENERIC_BODY: readonly string[] = ['id', 'title']
const GENERIC_META: readonly string[] = ['type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title', 'search_description', 'first_published_at', 'alias_of', 'parent', 'locale']

/**
 * The fields a listing's items may show: a page type's own for a listing of that type, else the
 * generic ones the CMS's Page model has (as a stored detail shows them: an 8.0 model may lack some).
 */
export function listingStoredFields(typeDetail: StoredFields, singleModel: boolean): StoredFields {
  if (singleModel) return typeDetail
  return { body: GENERIC_BODY.filter((name) => typeDetail.body.includes(name)), meta: GENERIC_META.filter((name) => typeDetail.meta.includes(name)) }
}
