/**
 * The CMS's JSON as Wagtail's pages API returns it (spec §5), kept apart from our own domain
 * types (`tree/snapshot.ts`) so the wire format can change in one place.
 *
 * Nullability follows Wagtail, not the seed's happy path: `type` is null when the model is gone,
 * `html_url` when the page is not routable, `first_published_at` for a never-published alias,
 * and `parent` for the site root (spec §5.3). Objects are open: a page type adds its own fields.
 *
 * The guards check what the code after them relies on, cheaply, on any parse result: ids may be
 * numbers or bigints, so a lossless parser's output passes as well as `JSON.parse`'s.
 * @module
 */

/** A page in reduced form: `meta.parent`, `meta.alias_of`, and page-valued API fields. */
export interface WagtailNestedPage {
  readonly id: number
  readonly meta: { readonly type: string | null; readonly detail_url: string; readonly html_url: string | null }
  readonly title: string
}

export interface WagtailListItemMeta {
  readonly type: string | null
  readonly detail_url: string
  readonly html_url: string | null
  readonly slug: string
  readonly first_published_at: string | null
  /** With `fields=…`: show_in_menus, seo_title, search_description, alias_of, locale, … */
  readonly [extra: string]: unknown
}

/** One element of a listing's `items`: the CMS's listing shape, never derived from a detail. */
export interface WagtailListItem {
  readonly id: number
  readonly meta: WagtailListItemMeta
  readonly title: string
  readonly [field: string]: unknown
}

/** `GET …/pages/`: no next/previous links; `total_count` ignores limit and offset (spec §3). */
export interface WagtailListEnvelope {
  readonly meta: { readonly total_count: number }
  readonly items: readonly WagtailListItem[]
}

export interface WagtailDetailMeta extends WagtailListItemMeta {
  readonly show_in_menus: boolean
  readonly seo_title: string
  readonly search_description: string
  /** Present in Wagtail's default detail; absent in the seed's sample. */
  readonly alias_of?: WagtailNestedPage | null
  /** `null` for the site root: its parent is outside the visible tree. */
  readonly parent: WagtailNestedPage | null
  /** Only with `WAGTAIL_I18N_ENABLED`. */
  readonly locale?: string
}

/** `GET …/pages/<id>/`: every default field, then the page type's own `api_fields`. */
export interface WagtailDetail {
  readonly id: number
  readonly meta: WagtailDetailMeta
  readonly title: string
  readonly [field: string]: unknown
}

/** Error bodies: Wagtail's own use `message`; DRF's negotiation/auth/method errors use `detail`. */
export type WagtailErrorBody = { readonly message: string } | { readonly detail: string }

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const isStringOrNull = (value: unknown): boolean => value === null || typeof value === 'string'

/** A non-negative whole number, as `JSON.parse` (number) or a lossless parser (bigint) yields it. */
export function isWholeNumber(value: unknown): boolean {
  if (typeof value === 'bigint') return value >= 0n
  return typeof value === 'number' && Number.isInteger(value) && value >= 0
}

export function isNestedPage(value: unknown): value is WagtailNestedPage {
  if (!isObject(value) || !isWholeNumber(value.id) || typeof value.title !== 'string') return false
  const { meta } = value
  return isObject(meta) && isStringOrNull(meta.type) && typeof meta.detail_url === 'string' && isStringOrNull(meta.html_url)
}

function hasListMeta(meta: unknown): meta is WagtailListItemMeta {
  return isObject(meta)
    && isStringOrNull(meta.type)
    && typeof meta.detail_url === 'string'
    && isStringOrNull(meta.html_url)
    && typeof meta.slug === 'string'
    && isStringOrNull(meta.first_published_at)
}

export function isListItem(value: unknown): value is WagtailListItem {
  return isObject(value) && isWholeNumber(value.id) && typeof value.title === 'string' && hasListMeta(value.meta)
}

export function isListEnvelope(value: unknown): value is WagtailListEnvelope {
  if (!isObject(value) || !isObject(value.meta) || !isWholeNumber(value.meta.total_count)) return false
  return Array.isArray(value.items) && value.items.every(isListItem)
}

export function isDetail(value: unknown): value is WagtailDetail {
  if (!isObject(value) || !isWholeNumber(value.id) || typeof value.title !== 'string') return false
  const { meta } = value
  if (!hasListMeta(meta)) return false
  const extra = meta as Json
  return typeof extra.show_in_menus === 'boolean'
    && typeof extra.seo_title === 'string'
    && typeof extra.search_description === 'string'
    // `parent` must be present: a missing key would silently make every page a root.
    && 'parent' in extra && (extra.parent === null || isNestedPage(extra.parent))
    && (extra.alias_of === undefined || extra.alias_of === null || isNestedPage(extra.alias_of))
}

export function isErrorBody(value: unknown): value is WagtailErrorBody {
  return isObject(value) && (typeof value.message === 'string' || typeof value.detail === 'string')
}
