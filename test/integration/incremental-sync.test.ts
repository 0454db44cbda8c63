/**
 * Incremental syncs: the listing pass, and details only for what it shows changed. Each test checks
 * both what it cost the CMS and that the result is exactly what a full sync would have built. The
 * listing is read with `html_url` here (SYNC_DERIVE_URLS=false); `url-derivation.test.ts` walks it
 * without.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
let reference: Harness | undefined
afterEach(async () => {
  await reference?.close()
  await h?.close()
  h = reference = undefined
})

/** limit 30 → 89 pages take 3 listing requests. */
const LISTING_REQUESTS = 3

async function start(): Promise<Harness> {
  h = await startShield({ origin: { limitMax: 30 }, env: { SYNC_DERIVE_URLS: 'false' } })
  h.origin.resetHits()
  return h
}

/** Detail ids the last sync fetched, sorted. */
function detailIds(harness: Harness): number[] {
  return harness.origin.requests.filter((r) => r.kind === 'detail').map((r) => Number(/pages\/(\d+)\//.exec(r.url)![1])).sort((a, b) => a - b)
}

/** Syncs incrementally and checks the result against a full sync of the same CMS by a fresh instance. */
async function syncAndCompare(harness: Harness): Promise<{ details: number[]; listings: number }> {
  harness.origin.resetHits()
  const result = await harness.app.shield.sync.syncNow()
  expect(result).toMatchObject({ ok: true, mode: 'incremental' })
  const details = detailIds(harness)
  const listings = harness.origin.requests.filter((r) => r.kind === 'list').length
  reference ??= await startShield({ sharedOrigin: harness.origin, synced: false })
  const full = await reference.app.shield.sync.syncNow({ full: true })
  expect(full).toMatchObject({ ok: true })
  const mine = harness.app.shield.sync.current!
  const truth = reference.app.shield.sync.current!
  expect(mine.pages.slice().map((p) => [p.id, p.parentId, p.digest])).toEqual(truth.pages.slice().map((p) => [p.id, p.parentId, p.digest]))
  expect(mine.fingerprint).toBe(truth.fingerprint)
  return { details, listings }
}

function leafOf(harness: Harness): FakePage {
  const snapshot = harness.app.shield.sync.current!
  const leaf = snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!
  return harness.origin.pages().find((p) => p.id === leaf.id)!
}

function parentWithChildren(harness: Harness): { page: FakePage; children: number[] } {
  const snapshot = harness.app.shield.sync.current!
  const record = snapshot.pages.slice().find((p) => p.parentId !== null && (snapshot.childrenOf.get(p.id)?.length ?? 0) >= 2)!
  return {
    page: harness.origin.pages().find((p) => p.id === record.id)!,
    children: snapshot.childrenOf.get(record.id)!.map((c) => c.id),
  }
}

describe('incremental sync', () => {
  it('costs the listing pages and nothing more when nothing changed', async () => {
    const harness = await start()
    const version = harness.app.shield.sync.current!.version
    const result = await harness.app.shield.sync.syncNow()
    expect(result).toMatchObject({ ok: true, mode: 'incremental', changed: false, detailsFetched: 0 })
    expect(harness.origin.hits).toMatchObject({ total: LISTING_REQUESTS, list: LISTING_REQUESTS, detail: 0 })
    expect(harness.app.shield.sync.current!.version).toBe(version)
  })

  it('fetches only the edited page when a leaf is renamed', async () => {
    const harness = await start()
    const leaf = leafOf(harness)
    harness.origin.updatePage(leaf.id, { title: `${leaf.title} (renamed)` })
    const { details, listings } = await syncAndCompare(harness)
    expect(details).toEqual([leaf.id])
    expect(listings).toBe(LISTING_REQUESTS)
    expect(JSON.parse((await harness.get(`/api/v1/cms/pages/${leaf.id}/`)).body).title).toBe(`${leaf.title} (renamed)`)
  })

  it('sees a show_in_menus flip in the listing (the default listing does not show it)', async () => {
    const harness = await start()
    const leaf = leafOf(harness)
    harness.origin.updatePage(leaf.id, { showInMenus: !leaf.showInMenus })
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([leaf.id])
  })

  it('fetches the children of a renamed page too: their details embed its title', async () => {
    const harness = await start()
    const { page, children } = parentWithChildren(harness)
    harness.origin.updatePage(page.id, { title: `${page.title} (renamed)` })
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([page.id, ...children].sort((a, b) => a - b))
    const child = JSON.parse((await harness.get(`/api/v1/cms/pages/${children[0]}/`)).body)
    expect(child.meta.parent.title).toBe(`${page.title} (renamed)`)
  })

  it('fetches a moved subtree (its URLs changed) and nothing else', async () => {
    const harness = await start()
    const { page } = parentWithChildren(harness)
    const snapshot = harness.app.shield.sync.current!
    const record = snapshot.byId.get(page.id)!
    const subtree = snapshot.pages.slice(record.order, record.subtreeEnd).map((p) => p.id)
    const target = snapshot.pages.slice().find((p) => p.parentId === snapshot.rootId && p.id !== page.parentId && p.id !== page.id)!
    harness.origin.movePage(page.id, target.id)
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([...subtree].sort((a, b) => a - b))
    const list = JSON.parse((await harness.get(`/api/v1/cms/pages/?child_of=${target.id}&limit=30`)).body)
    expect(list.items.map((i: { id: number }) => i.id)).toContain(page.id)
  })

  it('drops a deleted subtree without fetching anything', async () => {
    const harness = await start()
    const { page } = parentWithChildren(harness)
    harness.origin.removePage(page.id)
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([])
    expect((await harness.get(`/api/v1/cms/pages/${page.id}/`)).status).toBe(404)
  })

  it('re-reads the children of an unpublished page: their parent becomes null', async () => {
    const harness = await start()
    const { page, children } = parentWithChildren(harness)
    harness.origin.updatePage(page.id, { live: false })
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([...children].sort((a, b) => a - b))
    expect(JSON.parse((await harness.get(`/api/v1/cms/pages/${children[0]}/`)).body).meta.parent).toBeNull()
    // …and when it is published again, they get it back.
    harness.origin.updatePage(page.id, { live: true })
    const again = await syncAndCompare(harness)
    expect(again.details).toEqual([page.id, ...children].sort((a, b) => a - b))
  })

  it('fetches a created page alone', async () => {
    const harness = await start()
    const leaf = leafOf(harness)
    harness.origin.addPage({ ...leaf, id: 990_001, slug: 'brand-new', title: 'Brand new' })
    const { details } = await syncAndCompare(harness)
    expect(details).toEqual([990_001])
  })

  it('misses a body-only edit until asked: a refresh naming the page, or the full sync', async () => {
    const harness = await start()
    const leaf = leafOf(harness)
    harness.origin.updatePage(leaf.id, { extra: { ...leaf.extra, body: '<p>edited body</p>' } })
    await harness.app.shield.sync.syncNow()
    expect((await harness.get(`/api/v1/cms/pages/${leaf.id}/`)).body).not.toContain('edited body')
    harness.app.shield.sync.refresh({ ids: [leaf.id], reason: 'test' })
    harness.origin.resetHits()
    const result = await harness.app.shield.sync.syncNow()
    expect(result).toMatchObject({ ok: true, mode: 'incremental', detailsFetched: 1 })
    expect(detailIds(harness)).toEqual([leaf.id])
    expect((await harness.get(`/api/v1/cms/pages/${leaf.id}/`)).body).toContain('edited body')
  })

  it('agrees with a full sync after every step of a long walk of random edits', async () => {
    const harness = await start()
    let seed = 7
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
    let nextId = 995_000
    for (let step = 0; step < 14; step++) {
      const pages = harness.origin.pages().filter((p) => p.parentId !== null)
      const page = pick(pages)
      switch (step % 7) {
        case 0: harness.origin.updatePage(page.id, { title: `${page.title} ${step}` }); break
        case 1: harness.origin.updatePage(page.id, { slug: `${page.slug}-${step}` }); break
        case 2: harness.origin.updatePage(page.id, { seoTitle: `seo ${step}` }); break
        case 3: {
          const targets = pages.filter((p) => p.id !== page.id && !isBelow(harness.origin.pages(), p.id, page.id))
          harness.origin.movePage(page.id, pick(targets).id)
          break
        }
        case 4: harness.origin.addPage({ ...page, id: nextId++, slug: `new-${step}`, title: `New ${step}` }); break
        case 5: harness.origin.updatePage(page.id, { live: page.live === false }); break
        case 6: harness.origin.removePage(pick(pages.filter((p) => p.id !== page.parentId)).id); break
      }
      await syncAndCompare(harness)
    }
  })
})

/** Whether `id` is `ancestorId` or below it. */
function isBelow(pages: readonly FakePage[], id: number, ancestorId: number): boolean {
  const byId = new Map(pages.map((p) => [p.id, p]))
  for (let at: number | null = id; at !== null; at = byId.get(at)?.parentId ?? null) if (at === ancestorId) return true
  return false
}
