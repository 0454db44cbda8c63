/**
 * Page ids in a forwarded query that no page can have, replaced by ones that say the same without
 * reaching the database as an out-of-range integer.
 *
 * Wagtail converts `id`, `alias_of` and `translation_of` with Python's `int()`, which takes any
 * size, and hands the number to the database. Django 5 treats a number beyond the column's range
 * as matching nothing; Django 3.2/4.x let the database fail (SQLite past 64 bits, PostgreSQL past
 * 32), and the CMS answers an HTML 500. A page id is a 32-bit integer on every database Wagtail
 * supports, so a value outside that range matches no page: `0` says exactly that (ids start at 1),
 * and `-1` keeps `translation_of`'s "must be a positive integer" for a negative one.
 * @module
 */
import { pythonInt } from './python-int.js'

/** The largest page id any database gives Wagtail's `Page.id` (a 32-bit AutoField). */
const PAGE_ID_MAX = 2n ** 31n - 1n

/** The parameters whose values Wagtail turns into page ids. */
const PAGE_ID_PARAMETERS: ReadonlySet<string> = new Set(['id', 'alias_of', 'translation_of'])

/** `value` as the CMS may safely be sent it for `key`. */
export function safePageIdValue(key: string, value: string): string {
  if (!PAGE_ID_PARAMETERS.has(key)) return value
  const parsed = pythonInt(value)
  if (!parsed.ok || (parsed.value >= -PAGE_ID_MAX && parsed.value <= PAGE_ID_MAX)) return value
  return key === 'translation_of' && parsed.value < 0n ? '-1' : '0'
}
