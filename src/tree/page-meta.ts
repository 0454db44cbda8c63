/**
 * What a page's listing item says beyond the record's fields: its language (`meta.locale`,
 * present when the CMS has `WAGTAIL_I18N_ENABLED`; docs/wagtail-compatibility.md#translations)
 * its first publication (`meta.first_published_at`, as an instant) and its address (`meta.html_url`). Read from the items the
 * sync already holds, once per record: a page carried over unchanged keeps its record
 * (`build-snapshot.ts`), so a new snapshot reads only the pages that changed. Pure.
 * @module
 */
import { getPath, parseJsonSpans } from '../json/json-spans.js'
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

function metaOf(page: PageRecord): PageMeta {
  let meta = metaOfRecord.get(page)
  if (meta === undefined) {
    const item = parseJsonSpans(page.listItem)
    const locale = getPath(item, ['meta', 'locale'])
    const published = getPath(item, ['meta', 'first_published_at'])
    const htmlUrl = getPath(item, ['meta', 'html_url'])
    meta = {
      htmlUrl: htmlUrl === undefined ? undefined : page.listItem.slice(htmlUrl.start, htmlUrl.end),
      locale: locale?.kind === 'string' ? locale.value : null,
      publishedMicros: published?.kind === 'string' ? isoMicros(published.value) : null,
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
