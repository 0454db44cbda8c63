/**
 * Which of a page type's own date fields the CMS orders a typed listing by
 * (docs/wagtail-compatibility.md#ordering). OrderingFilter takes the model's API fields that are
 * database columns, and only the CMS knows which those are: a property may show a date too. A
 * field whose values in the type's stored details read as dates (`YYYY-MM-DD`) or instants is a
 * candidate, and `?type=<T>&order=<F>&limit=0` asks the CMS whether it orders by it: a 200 says it
 * does, Wagtail's 400 (7.1+) or 500 (older) that it does not. The candidates are read here (pure);
 * the sync's facts ask and remember (`cms-facts.ts`).
 * @module
 */
import { parseJsonSpans } from '../json/json-spans.js'
import { bytesOf } from '../tree/detail-body.js'
import { dateKindOf } from '../tree/page-dates.js'
import type { DateKind, DateOrders } from '../tree/snapshot.js'
import type { SyncedPage } from '../tree/build-snapshot.js'
import type { UpstreamGet } from './upstream-port.js'

/** A detail's members every page type has, which are no date field of the type's own. */
const GENERIC_MEMBERS = new Set(['id', 'meta', 'title'])
/** Pages of one type read at most to find each field's kind: a field empty on all of them stays the CMS's. */
const PAGES_READ_PER_TYPE = 20

/** Candidates: type → field → kind. */
export type DateCandidates = Map<string, Map<string, DateKind>>

/** The detail's own fields, each with its kind when its value reads as one, `null` when empty, `false` otherwise. */
function fieldKinds(detail: string | SyncedPage['detail']): Map<string, DateKind | null | false> {
  const kinds = new Map<string, DateKind | null | false>()
  const root = parseJsonSpans(typeof detail === 'string' ? detail : bytesOf(detail).toString('utf8'))
  if (root.kind !== 'object') return kinds
  for (const { key, value } of root.entries) {
    if (GENERIC_MEMBERS.has(key)) continue
    kinds.set(key, value.kind === 'null' ? null : value.kind === 'string' ? (dateKindOf(value.value) ?? false) : false)
  }
  return kinds
}

/**
 * The date fields of each type `wanted` says yes to, as the first pages of that type (in tree
 * order) show them: a field is a candidate when a page shows it as a date or an instant and none
 * of the pages read shows it otherwise. Every type `wanted` accepts is in the result, with no
 * fields when it has none.
 */
export function dateCandidates(pages: Iterable<SyncedPage>, wanted: (type: string) => boolean): DateCandidates {
  const seen = new Map<string, { read: number; done: boolean; kinds: Map<string, DateKind | null | false> } | null>()
  for (const page of pages) {
    let type = seen.get(page.type)
    if (type === undefined) {
      type = wanted(page.type) ? { read: 0, done: false, kinds: new Map() } : null
      seen.set(page.type, type)
    }
    if (type === null || type.done) continue
    for (const [field, kind] of fieldKinds(page.detail)) {
      const before = type.kinds.get(field)
      if (before === undefined || before === null) type.kinds.set(field, kind)
      else if (before !== kind && kind !== null) type.kinds.set(field, false)
    }
    type.read++
    type.done = type.read >= PAGES_READ_PER_TYPE || ![...type.kinds.values()].includes(null)
  }
  const candidates: DateCandidates = new Map()
  for (const [type, read] of seen) {
    if (read === null) continue
    const fields = new Map<string, DateKind>()
    for (const [field, kind] of read.kinds) if (kind === 'date' || kind === 'datetime') fields.set(field, kind)
    candidates.set(type, fields)
  }
  return candidates
}

/** Whether the CMS orders a listing of `type` by `field`; `undefined` when its answer says nothing (a 429, a 503…). */
export async function probeDateOrder(get: UpstreamGet, pagesPath: string, type: string, field: string, signal?: AbortSignal): Promise<boolean | undefined> {
  const answer = await get(`${pagesPath}?type=${encodeURIComponent(type)}&order=${encodeURIComponent(field)}&limit=0`, signal)
  if (answer.status === 200) return true
  // Wagtail 7.1+ refuses a field it cannot order by with a 400; older versions fail with a 500.
  return answer.status === 400 || answer.status === 500 ? false : undefined
}

/** Sorted by type and field, so that equal knowledge is equal JSON (the snapshot's fingerprint hashes it). */
export function dateOrdersOf(known: ReadonlyMap<string, ReadonlyMap<string, DateKind>>): DateOrders | undefined {
  const orders: Record<string, Record<string, DateKind>> = {}
  for (const type of [...known.keys()].sort()) {
    const fields = known.get(type)!
    if (fields.size === 0) continue
    orders[type] = Object.fromEntries([...fields].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }
  return Object.keys(orders).length === 0 ? undefined : orders
}
