/**
 * A page type's own date fields as its stored detail shows them (`Dialect.dateOrders`), read as
 * numbers an order can compare: a `DateField`'s day, a `DateTimeField`'s instant
 * (docs/wagtail-compatibility.md#ordering). Read once per record and field: a page carried over
 * unchanged keeps its record (`build-snapshot.ts`), so a new snapshot reads only the pages that
 * changed. Pure.
 * @module
 */
import { getMember, parseJsonSpans } from '../json/json-spans.js'
import { bytesOf } from './detail-body.js'
import { isoMicros } from './page-meta.js'
import type { DateKind, PageRecord } from './snapshot.js'

const DATE = /^(\d{4})-(\d\d)-(\d\d)$/

/** A `DateField`'s value as µs at that day's UTC midnight; `null` for anything else. */
function dayMicros(text: string): number | null {
  const match = DATE.exec(text)
  if (!match) return null
  const date = new Date(0)
  // setUTCFullYear, not Date.UTC: the latter reads years 0–99 as 1900–1999.
  date.setUTCFullYear(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
  if (date.getUTCDate() !== Number(match[3])) return null
  return date.getTime() * 1000
}

/** How `text` reads as a date field's value, if it reads as one. */
export function dateKindOf(text: string): DateKind | undefined {
  if (dayMicros(text) !== null) return 'date'
  return isoMicros(text) !== null ? 'datetime' : undefined
}

/** `text` as a value of a field of `kind`: its instant in µs; `null` when it is not one. */
export function dateMicros(text: string, kind: DateKind): number | null {
  return kind === 'date' ? dayMicros(text) : isoMicros(text)
}

const keysOfRecord = new WeakMap<PageRecord, Map<string, number | null>>()

/**
 * The page's value of its type's date field `field`, as µs; `null` when the detail shows `null`
 * (or no such member, or a value that does not read as `kind`): a value only the database places.
 */
export function dateFieldMicros(page: PageRecord, field: string, kind: DateKind): number | null {
  let keys = keysOfRecord.get(page)
  if (keys === undefined) keysOfRecord.set(page, (keys = new Map()))
  const cacheKey = `${kind}:${field}`
  let key = keys.get(cacheKey)
  if (key === undefined) {
    const value = getMember(parseJsonSpans(bytesOf(page.detail).toString('utf8')), field)
    key = value?.kind === 'string' ? dateMicros(value.value, kind) : null
    keys.set(cacheKey, key)
  }
  return key
}
