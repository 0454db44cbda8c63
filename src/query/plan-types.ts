/**
 * What the query planner decides for a request: answer from the snapshot, forward to the CMS,
 * or refuse in Wagtail's words.
 * @module
 */
import type { WagtailError } from './wagtail-messages.js'

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
}

export interface ListQuery extends PageSelection {
  /** Exactly one concrete model was asked for: Wagtail serialises the specific pages. */
  readonly specific: boolean
  readonly offset: number
  readonly limit: number
}

export type Plan<T> =
  | { readonly kind: 'error'; readonly error: WagtailError }
  /** The index cannot answer this faithfully; the CMS must (read-through). */
  | { readonly kind: 'forward'; readonly reason: string }
  | ({ readonly kind: 'index' } & T)

export type ListPlan = Plan<{ readonly query: ListQuery }>
export type DetailPlan = Plan<{ readonly id: number | undefined; readonly selection: PageSelection; readonly modelName: string }>
export type FindPlan = Plan<{ readonly id: number | undefined; readonly forwardQuery: Array<[string, string[]]> }>
