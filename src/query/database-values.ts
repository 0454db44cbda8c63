/**
 * Values in a forwarded query that Wagtail would hand to its database as integers the database
 * cannot take, replaced by ones that mean the same to the query and that it can.
 *
 * Wagtail converts `id`, `alias_of` and `translation_of` with Python's `int()`, which takes any
 * size, and hands the number to the database; so do `offset` and `limit`, bound as 64-bit
 * integers of the query's OFFSET and LIMIT. Django 5 treats an id beyond the column's range as
 * matching nothing; Django 3.2/4.x let the database fail (SQLite past 64 bits, PostgreSQL past 32
 * for ids), and the CMS answers an HTML 500 — before any check that comes later, but also in place
 * of the 4xx an earlier check would give. Replaced, the query reaches the CMS and every check runs
 * in Wagtail's order:
 *
 * - a page id is a 32-bit integer on every database Wagtail supports, so a value outside that
 *   range matches no page: `0` says exactly that (ids start at 1), and `-1` keeps
 *   `translation_of`'s "must be a positive integer" for a negative one;
 * - an `offset` past 2^63−1 is past the end of any result, as 2^63−1 is; a `limit` past it asks
 *   for everything, as 2^63−1 does (a CMS with WAGTAILAPI_LIMIT_MAX refuses both alike).
 * @module
 */
import { pythonInt } from './python-int.js'
import { DATABASE_INT_MAX } from './wagtail-messages.js'

/** The largest page id any database gives Wagtail's `Page.id` (a 32-bit AutoField). */
const PAGE_ID_MAX = 2n ** 31n - 1n

/** The parameters whose values Wagtail turns into page ids. */
const PAGE_ID_PARAMETERS: ReadonlySet<string> = new Set(['id', 'alias_of', 'translation_of'])

/** `value` as the CMS's database may safely be sent it for `key`. */
export function databaseSafeValue(key: string, value: string): string {
  const pageId = PAGE_ID_PARAMETERS.has(key)
  if (!pageId && key !== 'offset' && key !== 'limit') return value
  const parsed = pythonInt(value)
  if (!parsed.ok) return value
  if (!pageId) return parsed.value > DATABASE_INT_MAX ? String(DATABASE_INT_MAX) : value
  if (parsed.value >= -PAGE_ID_MAX && parsed.value <= PAGE_ID_MAX) return value
  return key === 'translation_of' && parsed.value < 0n ? '-1' : '0'
}
