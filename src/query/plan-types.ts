/**
 * What the query planner decides for a request: answer from the snapshot, forward to the CMS,
 * or refuse in Wagtail's words.
 * @module
 */
import type { MemberSelection } from '../json/select-members.js'
import type { ListQuery, PageSelection } from '../tree/page-selection.js'
import type { WagtailError } from './wagtail-messages.js'

export type Plan<T> =
  | { readonly kind: 'error'; readonly error: WagtailError }
  /** The index cannot answer this faithfully; the CMS must (read-through). */
  | { readonly kind: 'forward'; readonly reason: string }
  | ({ readonly kind: 'index' } & T)

export type ListPlan = Plan<{ readonly query: ListQuery }>
export type DetailPlan = Plan<{
  readonly id: number | undefined
  readonly selection: PageSelection
  readonly modelName: string
  /** `?fields=`'s members of the stored detail; unset: the whole of it. */
  readonly members?: MemberSelection
}>
/** `typed`: the query names a type, so the found page's type decides the answer too. */
export type FindPlan = Plan<{ readonly id: number | undefined; readonly forwardQuery: Array<[string, string[]]>; readonly typed: boolean }>
