import { describe, expect, it } from 'vitest'
import { parseQueryParams } from '../query/query-params.js'
import { planListing } from '../query/plan-listing.js'
import { DEFAULT_DIALECT } from '../../test/helpers/make-snapshot.js'
import { buildSnapshot, type SyncedPage } from './build-snapshot.js'
import { localeOf, localesOf } from './page-locales.js'
import { selectPages } from './select-pages.js'

/** Home 3 (en) › 4; its translation 13 (de) › 14; 20 carries no locale (i18n off). */
function translated(): ReturnType<typeof buildSnapshot> {
  const page = (id: number, parentId: number | null, locale: string | undefined): SyncedPage => ({
    id, type: 'home.BlogPage', title: `Page ${id}`, slug: `page-${id}`, showInMenus: false, seoTitle: '', searchDescription: '', parentId,
    listItem: `{"id": ${id}, "meta": {"type": "home.BlogPage", "title": "\\"locale\\": \\"fr\\""${locale === undefined ? '' : `, "locale": "${locale}"`}}}`,
    detail: `{"id": ${id}}`,
  })
  return buildSnapshot([page(3, null, 'en'), page(4, 3, 'en'), page(20, 3, undefined), page(13, null, 'de'), page(14, 13, 'de')], { version: 1, syncedAt: 0, dialect: DEFAULT_DIALECT })
}

describe('page locales', () => {
  it('are read from each listing item\'s meta.locale, not from text that looks like one', () => {
    const snapshot = translated()
    expect(snapshot.pages.slice().map((page) => localeOf(page))).toEqual(['en', 'en', null, 'de', 'de'])
    expect(localesOf(snapshot)).toEqual(new Set(['en', 'de']))
  })

  it('filter a listing by a language the snapshot knows, and send any other to the CMS', () => {
    const snapshot = translated()
    const plan = (query: string) => planListing(parseQueryParams(query), snapshot)
    const german = plan('locale=de')
    expect(german.kind).toBe('index')
    if (german.kind === 'index') expect(selectPages(snapshot, german.query).map((page) => page.id)).toEqual([13, 14])
    for (const query of ['locale=fr', 'locale=', 'locale=DE', 'locale=de&translation_of=3', 'locale=de&search=x', 'locale=de&order=id']) {
      expect(plan(query).kind, query).toBe('forward')
    }
    expect(plan('locale=de&limit=abc')).toMatchObject({ kind: 'error', error: { status: 400 } })
  })
})
