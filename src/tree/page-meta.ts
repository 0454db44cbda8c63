/**
 * What a page's listing item says beyond the record's fields: its language (`meta.locale`,
 * present when the CMS has `WAGTAIL_I18N_ENABLED`; docs/wagtail-compatibility.md#translations)
 * its first publication (`meta.first_published_at`, as an instant) and its address (`meta.html_url`). Read from the items the
 * sync already holds, once per record: a page carried over unchanged keeps its record
 * (`build-snapshot.ts`), so a new snapshot reads only the pages that changed. Pure.
 * @module
 */
import { JsonTape } from '../json/json-tape.js'
import type { PageRecord, Snapshot } from './snapshot.js'

interface PageMeta {
  /** `null`: the item carries no locale (i18n off, or a CMS that does not write it). */
  readonly locale: string | null
  /** µs since the epoch; `null` for a page never published, or a value this module cannot read. */
  readonly publishedMicros: number | null
  /** `meta.html_url` as written (JSON text, `null` included); `undefined` when the item has none. */
  readonly htmlUrl: string | undefined
}

const metaOfRecord = new WeakMap<PageRecord, PageMeta>()
const localesOfSnapshot = new WeakMap<Snapshot, ReadonlySet<string>>()

/** Django's `isoformat()` of an aware datetime, as DRF writes it (`Z` for UTC, microseconds when not zero). */
const ISO_DATETIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:Z|([+-])(\d\d):(\d\d))$/

/** An aware ISO datetime as µs since the epoch; `null` for anything else (a naive one included). */
export function isoMicros(text: string): number | null {
  const match = ISO_DATETIME.exec(text)
  if (!match) return null
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  // setUTCFullYear, not Date.UTC: the latter reads years 0–99 as 1900–1999.
  const date = new Date(0)
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day))
  date.setUTCHours(Number(hour), Number(minute) - offset, Number(second), 0)
  return date.getTime() * 1000 + Number(fraction.padEnd(6, '0'))
}

const META_KEYS = ['locale', 'first_published_at', 'html_url'] as const
const metaTokens = new Int32Array(META_KEYS.length)
/** One tape for every item read here: each is read to the end before the next is parsed. */
const itemTape = new JsonTape()

function metaOf(page: PageRecord): PageMeta {
  let meta = metaOfRecord.get(page)
  if (meta === undefined) {
    const tape = itemTape.parseText(page.listItem)
    const found = tape.members(tape.member(0, 'meta'), META_KEYS, metaTokens)
    const locale = found[0] as number
    const published = found[1] as number
    const htmlUrl = found[2] as number
    meta = {
      htmlUrl: htmlUrl < 0 ? undefined : tape.raw(htmlUrl),
      locale: locale >= 0 && tape.isString(locale) ? tape.stringValue(locale) : null,
      publishedMicros: published >= 0 && tape.isString(published) ? isoMicros(tape.stringValue(published)) : null,
    }
    metaOfRecord.set(page, meta)
  }
  return meta
}

export const localeOf = (page: PageRecord): string | null => metaOf(page).locale

export const publishedMicrosOf = (page: PageRecord): number | null => metaOf(page).publishedMicros

/** The page's public address as its listing item writes it: what a move or a new slug changes. */
export const htmlUrlOf = (page: PageRecord): string | undefined => metaOf(page).htmlUrl

/** Every language code some page of the snapshot carries. */
export function localesOf(snapshot: Snapshot): ReadonlySet<string> {
  let locales = localesOfSnapshot.get(snapshot)
  if (locales === undefined) {
    const found = new Set<string>()
    for (const page of snapshot.pages) {
      const locale = localeOf(page)
      if (locale !== null) found.add(locale)
    }
    locales = found
    localesOfSnapshot.set(snapshot, locales)
  }
  return locales
}
