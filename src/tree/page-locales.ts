/**
 * Each page's language, as its listing item says it (`meta.locale`, present when the CMS has
 * `WAGTAIL_I18N_ENABLED`; docs/wagtail-compatibility.md#translations), and the languages a
 * snapshot's pages carry. Read from the items the sync already holds, once per record: a page
 * carried over unchanged keeps its record (`build-snapshot.ts`), so a new snapshot reads only the
 * pages that changed. Pure.
 * @module
 */
import { getPath, parseJsonSpans } from '../json/json-spans.js'
import type { PageRecord, Snapshot } from './snapshot.js'

/** `null`: the item carries no locale (i18n off, or a CMS that does not write it). */
const localeOfRecord = new WeakMap<PageRecord, string | null>()
const localesOfSnapshot = new WeakMap<Snapshot, ReadonlySet<string>>()

export function localeOf(page: PageRecord): string | null {
  let locale = localeOfRecord.get(page)
  if (locale === undefined) {
    const node = getPath(parseJsonSpans(page.listItem), ['meta', 'locale'])
    locale = node?.kind === 'string' ? node.value : null
    localeOfRecord.set(page, locale)
  }
  return locale
}

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
