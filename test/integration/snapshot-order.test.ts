/**
 * `order=` by id or first publication is answered from the snapshot when it decides the order
 * alone; where pages share a publication time, or have none, the database puts them in order, so
 * the CMS answers.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { expectSameAsCms } from './compare.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

describe('order from the snapshot', () => {
  it('answers id and first_published_at orders, either way round, exactly and at no CMS cost', async () => {
    h = await startShield({ origin: { pages: generateSite({ pages: 40, seed: 5 }) } })
    const root = h.app.shield.sync.current!.rootId
    for (const url of [
      '/api/v1/cms/pages/?order=id', '/api/v1/cms/pages/?order=-id&limit=5&offset=3',
      '/api/v1/cms/pages/?order=first_published_at&limit=20', '/api/v1/cms/pages/?order=-first_published_at&limit=7',
      `/api/v1/cms/pages/?order=-first_published_at&child_of=${root}`, '/api/v1/cms/pages/?order=-first_published_at&type=cms.GenericPage&limit=5',
      `/api/v1/cms/pages/${root}/?order=-first_published_at`,
    ]) {
      expect((await expectSameAsCms(h, url)).cmsHits, url).toBe(0)
    }
  })

  it('asks the CMS when two selected pages share a publication time, or one has none', async () => {
    const pages = generateSite({ pages: 20, seed: 5 })
    pages[3]!.firstPublishedAt = pages[4]!.firstPublishedAt
    h = await startShield({ origin: { pages } })
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?order=first_published_at')).cmsHits).toBe(1)
    // Apart from the pair, the snapshot decides alone.
    expect((await expectSameAsCms(h, `/api/v1/cms/pages/?order=first_published_at&id=${pages[5]!.id}`)).cmsHits).toBe(0)
    h.origin.updatePage(pages[3]!.id, { firstPublishedAt: null })
    await h.app.shield.sync.syncNow()
    expect((await expectSameAsCms(h, '/api/v1/cms/pages/?order=-first_published_at&limit=3')).cmsHits).toBe(1)
  })

  it('follows a new publication time at the next sync', async () => {
    const pages = generateSite({ pages: 20, seed: 5 })
    h = await startShield({ origin: { pages } })
    const before = JSON.parse((await h.get('/api/v1/cms/pages/?order=-first_published_at&limit=1')).body)
    const last = pages[pages.length - 1]!
    h.origin.updatePage(last.id, { firstPublishedAt: '2030-01-01T00:00:00Z' })
    await h.app.shield.sync.syncNow()
    const after = await expectSameAsCms(h, '/api/v1/cms/pages/?order=-first_published_at&limit=1')
    expect(after.cmsHits).toBe(0)
    expect(JSON.parse(after.body).items[0].id).toBe(last.id)
    expect(JSON.parse(after.body).items[0].id === before.items[0].id).toBe(last.id === before.items[0].id)
  })
})
