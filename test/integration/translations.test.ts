/**
 * A CMS with WAGTAIL_I18N_ENABLED: the German tree is listed beside the English one, items carry
 * `meta.locale`, and `locale=` is answered from the snapshot for a language its pages carry; the
 * CMS answers the rest (`translation_of`, a Locale without pages here, an unknown one).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, type FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const GERMAN = 1_000

/** An English tree and its German translation (ids + 1000), as `copy_for_translation` makes it. */
function translatedSite(): FakePage[] {
  const english = generateSite({ pages: 25, seed: 3, timeZone: 'UTC' })
  const german = english.map((page): FakePage => ({
    ...page,
    id: page.id + GERMAN,
    parentId: page.parentId === null ? null : page.parentId + GERMAN,
    ...(page.aliasOf == null ? {} : { aliasOf: page.aliasOf + GERMAN }),
    slug: page.parentId === null ? `${page.slug}-de` : page.slug,
    title: `${page.title} (de)`,
    locale: 'de',
    translationKey: `page-${page.id}`,
  }))
  return [...english, ...german]
}

function start(): Promise<Harness> {
  return startShield({ origin: { pages: translatedSite(), i18n: true, locales: ['en', 'de', 'fr'] } })
}

describe('translations (WAGTAIL_I18N_ENABLED)', () => {
  it('lists every language\'s tree and filters by a language the snapshot knows, exactly and at no CMS cost', async () => {
    h = await start()
    const root = h.app.shield.sync.current!.rootId
    const germanChild = h.app.shield.sync.current!.pages.slice().find((page) => page.parentId === root + GERMAN)!.id
    for (const url of [
      '/api/v1/cms/pages/?limit=100',
      '/api/v1/cms/pages/?locale=de&limit=100',
      '/api/v1/cms/pages/?locale=en&offset=5&limit=3',
      `/api/v1/cms/pages/?locale=de&child_of=${root}`,
      `/api/v1/cms/pages/?locale=en&child_of=${root}&show_in_menus=true`,
      '/api/v1/cms/pages/?locale=de&limit=21',
      `/api/v1/cms/pages/${germanChild}/`,
      `/api/v1/cms/pages/${germanChild}/?locale=de`,
      `/api/v1/cms/pages/${germanChild}/?locale=en`,
      `/api/v1/cms/pages/${root}/?locale=de`,
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
    const german = JSON.parse((await h.get('/api/v1/cms/pages/?locale=de&limit=100')).body)
    expect(german.meta.total_count).toBe(25)
    expect(new Set(german.items.map((item: { meta: { locale: string } }) => item.meta.locale))).toEqual(new Set(['de']))
  })

  it('asks the CMS for a language no page of the snapshot carries, for translation_of, and for a German path', async () => {
    h = await start()
    const root = h.app.shield.sync.current!.rootId
    for (const url of ['/api/v1/cms/pages/?locale=fr', '/api/v1/cms/pages/?locale=xx', '/api/v1/cms/pages/?locale=', `/api/v1/cms/pages/?translation_of=${root}`, '/api/v1/cms/pages/?translation_of=root&locale=de']) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(1)
    }
    expect((await h.get('/api/v1/cms/pages/?locale=fr')).body).toContain('"total_count": 0')
    expect((await h.get('/api/v1/cms/pages/?locale=xx')).status).toBe(404)
  })

  it('finds pages by path from the English root only, as Wagtail routes', async () => {
    h = await start()
    const snapshot = h.app.shield.sync.current!
    const child = snapshot.childrenOf.get(snapshot.rootId)![0]!
    await expectSameAsCms(h, `/api/v1/cms/pages/find/?html_path=${child.slug}/`)
    await expectSameAsCms(h, `/api/v1/cms/pages/find/?html_path=de/${child.slug}/`)
  })

  it('sees a retitle of a German page at the next sync, in the German listing too', async () => {
    h = await start()
    const root = h.app.shield.sync.current!.rootId
    const germanChild = h.app.shield.sync.current!.pages.slice().find((page) => page.parentId === root + GERMAN)!.id
    h.origin.updatePage(germanChild, { title: 'Neu betitelt' })
    const result = await h.app.shield.sync.syncNow()
    expect(result.ok).toBe(true)
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?locale=de&limit=100')).body).toContain('Neu betitelt')
  })
})

describe('fields on a detail with translations', () => {
  it('answers * and locale from the stored details, which carry meta.locale, on details and listings', async () => {
    h = await start()
    const root = h.app.shield.sync.current!.rootId
    for (const fields of ['*', 'locale', '_,locale,title', '-locale']) {
      for (const url of [`/api/v1/cms/pages/${root + GERMAN}/?fields=${encodeURIComponent(fields)}`, `/api/v1/cms/pages/?locale=de&limit=5&fields=${encodeURIComponent(fields)}`]) {
        expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
      }
    }
  })
})
