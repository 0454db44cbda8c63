import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseQueryParams } from '../query/query-params.js'
import { planListing } from '../query/plan-listing.js'
import { DEFAULT_DIALECT } from '../../test/helpers/make-snapshot.js'
import { buildSnapshot, type SyncedPage } from './build-snapshot.js'
import { isoMicros, localeOf, localesOf } from './page-meta.js'
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
    for (const query of ['locale=fr', 'locale=', 'locale=DE', 'locale=de&translation_of=3', 'locale=de&search=x', 'locale=de&order=title']) {
      expect(plan(query).kind, query).toBe('forward')
    }
    expect(plan('locale=de&limit=abc')).toMatchObject({ kind: 'error', error: { status: 400 } })
  })
})

describe('publication instants', () => {
  it('read DRF\'s aware ISO datetimes to the microsecond, in any offset', () => {
    expect(isoMicros('2024-05-06T07:08:09Z')).toBe(Date.UTC(2024, 4, 6, 7, 8, 9) * 1000)
    expect(isoMicros('2024-05-06T09:08:09.000001+02:00')).toBe(Date.UTC(2024, 4, 6, 7, 8, 9) * 1000 + 1)
    expect(isoMicros('2024-05-06T07:08:09.5Z')).toBe(Date.UTC(2024, 4, 6, 7, 8, 9) * 1000 + 500_000)
    expect(isoMicros('2024-05-06T02:08:09-05:00')).toBe(Date.UTC(2024, 4, 6, 7, 8, 9) * 1000)
    for (const text of ['2024-05-06T07:08:09', '2024-05-06', 'soon', '']) expect(isoMicros(text), text).toBeNull()
    expect(isoMicros('0012-03-04T00:00:00Z')).toBe(new Date('0012-03-04T00:00:00Z').getTime() * 1000)
  })

  it('agree with Date for any instant and offset (fast-check)', () => {
    fc.assert(fc.property(fc.date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (date, offset) => {
      const shifted = new Date(date.getTime() + offset * 60_000).toISOString().slice(0, 19)
      const sign = offset < 0 ? '-' : '+'
      const zone = `${sign}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`
      expect(isoMicros(`${shifted}${zone}`)).toBe(Math.floor(date.getTime() / 1000) * 1_000_000)
    }))
  })
})
