/**
 * Which pages a request selects: the part of a planned query the tree index evaluates. Shared by
 * the tree (which selects) and the query planners (which produce it), so it lives in the lower
 * of the two layers (docs/architecture.md#layers-and-folders).
 * @module
 */
import type { DateKind } from './snapshot.js'

/** Equality filters on the generic page fields (Wagtail's FieldsFilter, docs/wagtail-compatibility.md#field-filters). */
export interface PageFilters {
  /** `id=`; a value no page can have (negative, beyond 2^53) becomes -1. */
  readonly id?: number
  readonly title?: string
  readonly slug?: string
  readonly seoTitle?: string
  readonly searchDescription?: string
  readonly showInMenus?: boolean
}

/** The part of a pages query that selects pages: shared by listing and detail. */
export interface PageSelection {
  /** Canonical type names to keep, or `null` for every type. */
  readonly types: ReadonlySet<string> | null
  readonly filters: PageFilters
  readonly childOf?: number
  readonly ancestorOf?: number
  readonly descendantOf?: number
  /** LocaleFilter's language code: only pages whose `meta.locale` is it. */
  readonly locale?: string
  /** TranslationOfFilter's page: only its other translations (`tree/translations.ts`). */
  readonly translationOf?: number
}

/**
 * OrderingFilter's one field the snapshot can order by without the database: `id`, or the first
 * publication or a page type's own date field when every selected page has a value and no two
 * share it (docs/wagtail-compatibility.md#ordering).
 */
export interface PageOrder {
  /** `id`, `first_published_at`, or a type's own date field (with `kind`). */
  readonly field: string
  readonly descending: boolean
  /** A type's own date field (`Dialect.dateOrders`): how its stored values read. */
  readonly kind?: DateKind
}

/** `?fields=` on a listing, shown from each page's stored detail (`query/field-selection.ts`). */
export interface ListFields {
  /** What the selection is, for the rendered-list cache. */
  readonly key: string
  /** The stored detail's body and meta members to show, in order; `html_url` from the page's listing item. */
  readonly body: readonly string[]
  readonly meta: readonly string[]
  /** `locale`'s value as JSON text, when shown but not in the stored details (`Dialect.unlistedLocale`). */
  readonly locale?: string
}

export interface ListQuery extends PageSelection {
  /** Unset: each page's stored listing item, as it is. */
  readonly fields?: ListFields
  /** Unset: tree order, the CMS's default. */
  readonly order?: PageOrder
  /** Exactly one concrete model was asked for: Wagtail serialises the specific pages. */
  readonly specific: boolean
  readonly offset: number
  readonly limit: number
}
