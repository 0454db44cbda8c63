/**
 * Which pages a request selects: the part of a planned query the tree index evaluates. Shared by
 * the tree (which selects) and the query planners (which produce it), so it lives in the lower
 * of the two layers (docs/architecture.md#layers-and-folders).
 * @module
 */

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
}

export interface ListQuery extends PageSelection {
  /** Exactly one concrete model was asked for: Wagtail serialises the specific pages. */
  readonly specific: boolean
  readonly offset: number
  readonly limit: number
}
