/**
 * A CMS with WAGTAIL_I18N_ENABLED: the German tree is listed beside the English one, items carry
 * `meta.locale`, `locale=` is answered from the snapshot for a language its pages carry and
 * `translation_of` from the groups the sync learned; the CMS answers the rest (a Locale without
 * pages here, an unknown one).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { generateSite, startFakeWagtail, type FakePage } from '../fake-wagtail/index.js'
import { eventually } from '../helpers/eventually.js'
import { sharedRedisUrl } from '../helpers/redis-server.js'
import { asServedByShield, startShield, type Harness } from '../helpers/start-shield.js'
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

  it('asks the CMS for a language no page of the snapshot carries', async () => {
    h = await start()
    for (const url of ['/api/v1/cms/pages/?locale=fr', '/api/v1/cms/pages/?locale=xx', '/api/v1/cms/pages/?locale=']) {
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

/** The sync's own `translation_of` requests since the counters were last read. */
function translationRequests(harness: Harness): string[] {
  return harness.origin.requests.map((request) => request.url).filter((url) => url.includes('translation_of='))
}

describe('translation_of', () => {
  it('answers every form from the groups the sync learned, exactly and at no CMS cost', async () => {
    h = await start()
    const snapshot = h.app.shield.sync.current!
    const root = snapshot.rootId
    const child = snapshot.childrenOf.get(root)![0]!.id
    for (const url of [
      `/api/v1/cms/pages/?translation_of=${root}`,
      `/api/v1/cms/pages/?translation_of=${child + GERMAN}`,
      '/api/v1/cms/pages/?translation_of=root',
      '/api/v1/cms/pages/?translation_of=root&locale=de',
      `/api/v1/cms/pages/?translation_of=${child}&locale=en`,
      `/api/v1/cms/pages/?translation_of=${child}&type=${snapshot.byId.get(child)!.type}`,
      `/api/v1/cms/pages/?translation_of=${child}&fields=title,locale`,
      `/api/v1/cms/pages/?translation_of=${child}&order=-id`,
      `/api/v1/cms/pages/?translation_of=${child}&child_of=${root + GERMAN}`,
      `/api/v1/cms/pages/?translation_of=+${child}&offset=1`,
      `/api/v1/cms/pages/${child + GERMAN}/?translation_of=${child}`,
      `/api/v1/cms/pages/${child}/?translation_of=${child}`,
      '/api/v1/cms/pages/?translation_of=abc',
      '/api/v1/cms/pages/?translation_of=-3',
      '/api/v1/cms/pages/?translation_of=',
      '/api/v1/cms/pages/?translation_of=999999',
      '/api/v1/cms/pages/?translation_of=99999999999999999999',
      `/api/v1/cms/pages/${child}/?translation_of=abc`,
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it('learns the groups with one request per group at the first sync, and asks only about pages new at later ones', async () => {
    h = await start()
    const first = translationRequests(h)
    // 25 English pages, each with its German translation: 25 groups, one request each.
    expect(first).toHaveLength(25)
    h.origin.resetHits()
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    expect(translationRequests(h)).toEqual([])

    const root = h.app.shield.sync.current!.rootId
    h.origin.addPage({ ...h.origin.pages().find((page) => page.id === root + 1)!, id: 5_000, parentId: root + GERMAN, slug: 'neu', title: 'Neu', locale: 'de', translationKey: 'page-5000' })
    h.origin.addPage({ ...h.origin.pages().find((page) => page.id === root + 1)!, id: 5_001, parentId: root, slug: 'new', title: 'New', locale: 'en', translationKey: 'page-5000' })
    h.origin.resetHits()
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    // Two new pages of one group: the first answer names the second, which is not asked about.
    expect(translationRequests(h)).toHaveLength(1)
    for (const url of ['/api/v1/cms/pages/?translation_of=5000', '/api/v1/cms/pages/?translation_of=5001', '/api/v1/cms/pages/5001/?translation_of=5000']) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it('forgets a deleted translation, and a new version of the snapshot says so to every reader', async () => {
    h = await start()
    const root = h.app.shield.sync.current!.rootId
    const child = h.app.shield.sync.current!.childrenOf.get(root)![0]!.id
    expect(JSON.parse((await h.get(`/api/v1/cms/pages/?translation_of=${child}`)).body).meta.total_count).toBe(1)
    h.origin.removePage(child + GERMAN)
    h.origin.resetHits()
    expect((await h.app.shield.sync.syncNow()).ok).toBe(true)
    expect(translationRequests(h)).toEqual([])
    expect((await expectSameAsCms(h, `/api/v1/cms/pages/?translation_of=${child}`)).body).toContain('"total_count": 0')
  })

  it('needs no request on a Site in one language, and answers from the snapshot there too', async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 12, seed: 5, timeZone: 'UTC' }), i18n: true, locales: ['en', 'de'] } })
    expect(translationRequests(h)).toEqual([])
    const root = h.app.shield.sync.current!.rootId
    for (const url of [`/api/v1/cms/pages/?translation_of=${root}`, '/api/v1/cms/pages/?translation_of=root', '/api/v1/cms/pages/?translation_of=999']) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it('asks the CMS when its listing shows no language (i18n off)', async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 12, seed: 5, timeZone: 'UTC' }) } })
    const root = h.app.shield.sync.current!.rootId
    expect((await expectSameAsCms(h, `/api/v1/cms/pages/?translation_of=${root}`)).cmsHits).toBe(1)
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?translation_of=abc')).cmsHits).toBe(0)
  })
})

describe('translation_of with several instances on one Redis', () => {
  it('a follower answers from the groups the leader learned, new translations included, with no CMS request of its own', async () => {
    const cms = await startFakeWagtail({ pages: translatedSite(), i18n: true, locales: ['en', 'de'] })
    const env = { REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: `test-translations-${randomUUID()}:`, LEADER_LEASE: '900ms', REFRESH_DEBOUNCE: '20ms' }
    const leader = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    const follower = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true } })
    try {
      await eventually(() => follower.app.shield.sync.current !== undefined && follower.app.shield.cluster!.role === 'follower', 'the follower serves')
      const root = leader.app.shield.sync.current!.rootId
      const english = cms.pages().find((page) => page.parentId === root)!
      cms.addPage({ ...english, id: 7_000, parentId: root + GERMAN, slug: 'uebersetzt', title: 'Übersetzt', locale: 'de', translationKey: `page-${english.id}` })
      expect((await leader.app.shield.sync.syncNow()).ok).toBe(true)
      await eventually(() => follower.app.shield.sync.current!.fingerprint === leader.app.shield.sync.current!.fingerprint, 'the follower serves the leader\'s snapshot')
      const url = `/api/v1/cms/pages/?translation_of=${english.id}`
      cms.resetHits()
      const answer = await follower.get(url)
      expect(cms.hits.total).toBe(0)
      const theirs = await (await fetch(cms.url + url)).text()
      expect(answer.body).toBe(asServedByShield(theirs, follower.app.shield.config.apiPath))
      expect(JSON.parse(answer.body).meta.total_count).toBe(2)
    } finally {
      await follower.close()
      await leader.close()
      await cms.close()
    }
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
