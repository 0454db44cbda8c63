import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { buildSnapshot, pageDigest, patchSnapshot, type SyncedPage } from './build-snapshot.js'
import { bytesOf } from './detail-body.js'
import { arbitraryTree, DIALECT, syncedPages } from './random-tree.test-helper.js'
import { StoredPage } from './stored-page.js'
import type { PageRecord, Snapshot } from './snapshot.js'

/** `pages` as a load makes them: their items back to back in one buffer, read through StoredPage. */
function stored(pages: readonly SyncedPage[]): StoredPage[] {
  const texts = Buffer.concat(pages.flatMap((page) => [Buffer.from(page.listItem), Buffer.from(page.typedListItem ?? '')]))
  let at = 0
  return pages.map((page) => {
    const listEnd = at + Buffer.byteLength(page.listItem)
    const typedEnd = page.typedListItem === undefined ? -1 : listEnd + Buffer.byteLength(page.typedListItem)
    const where = { bytes: texts, start: at, listEnd, typedEnd }
    at = typedEnd === -1 ? listEnd : typedEnd
    const detail = Buffer.from(typeof page.detail === 'string' ? page.detail : bytesOf(page.detail))
    const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
    return new StoredPage(page.id, page.type, page.title, page.slug, page.showInMenus, page.seoTitle, page.searchDescription, page.parentId, detail, digest, where)
  })
}

/** A record by name, its detail as text: what a reader of the snapshot can see of it. */
function seen(record: PageRecord) {
  const { id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, order, subtreeEnd, listItem, typedListItem, digest } = record
  return { id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, order, subtreeEnd, listItem, typedListItem, digest, detail: bytesOf(record.detail).toString() }
}

function readable(snapshot: Snapshot) {
  return {
    fingerprint: snapshot.fingerprint,
    pages: snapshot.pages.slice().map(seen),
    byPath: [...snapshot.byPath],
    types: [...snapshot.types],
    children: snapshot.pages.slice().map((record) => (snapshot.childrenOf.get(record.id) ?? []).map((child) => child.id)),
  }
}

const page = (id: number, listItem: string, typedListItem?: string): SyncedPage => ({
  id, type: 'blog.BlogPage', title: `Page ${id}`, slug: `p${id}`, showInMenus: false, seoTitle: '', searchDescription: '', parentId: id === 1 ? null : 1,
  listItem, ...(typedListItem === undefined ? {} : { typedListItem }), detail: `{"id": ${id}}`,
})

describe('StoredPage', () => {
  it('reads its items from the stored UTF-8 bytes, several bytes to a character included', () => {
    const [plain, redirect] = stored([page(1, '{"title": "Zahnersatz für Kinder – ☃ 𝄞"}'), page(2, '{"id": 2}', '{"id": 2, "html_url": "https://partner.example/"}')])
    expect(plain!.listItem).toBe('{"title": "Zahnersatz für Kinder – ☃ 𝄞"}')
    expect(plain!.typedListItem).toBeUndefined()
    expect(redirect!.listItem).toBe('{"id": 2}')
    expect(redirect!.typedListItem).toBe('{"id": 2, "html_url": "https://partner.example/"}')
  })

  it('decodes its items once and lets go of the bytes', () => {
    const bytes = Buffer.from('{"a": 1}{"b": 2}')
    const storedPage = new StoredPage(1, 'a.B', 't', 's', false, '', '', null, Buffer.from('{}'), 'digest', { bytes, start: 0, listEnd: 8, typedEnd: 16 })
    expect(storedPage.typedListItem).toBe('{"b": 2}')
    bytes.fill(0x20)
    expect(storedPage.listItem).toBe('{"a": 1}')
    expect(storedPage.typedListItem).toBe('{"b": 2}')
  })

  it('is its own record where the build first places it, and anywhere else a record of its own', () => {
    const pages = stored([page(1, '{"id": 1}'), page(2, '{"id": 2}'), page(3, '{"id": 3}')])
    const options = { version: 1, syncedAt: 5, dialect: DIALECT }
    const first = buildSnapshot(pages, options)
    pages.forEach((storedPage, order) => expect(first.pages.at(order)).toBe(storedPage))
    // The same pages at the same places: the same records again.
    buildSnapshot(pages, { ...options, version: 2 }).pages.slice().forEach((record, order) => expect(record).toBe(pages[order]))
    // Page 2 gone: page 3 moves up one place and the root's subtree ends sooner; both get records of their own.
    const second = buildSnapshot([pages[0]!, pages[2]!], { ...options, version: 3 })
    const [root, moved] = second.pages.slice() as [PageRecord, PageRecord]
    expect(root).not.toBe(pages[0])
    expect(moved).not.toBe(pages[2])
    expect(seen(root)).toEqual({ ...seen(pages[0]!), subtreeEnd: 2 })
    expect(seen(moved)).toEqual({ ...seen(pages[2]!), order: 1, subtreeEnd: 2 })
    expect([pages[0]!.subtreeEnd, pages[2]!.order]).toEqual([3, 2])
  })

  it('builds, and patches, to exactly what the same pages as plain objects build to (property)', () => {
    fc.assert(
      fc.property(arbitraryTree(), fc.nat(), (model, pick) => {
        const pages = syncedPages(model)
        const options = { version: 1, syncedAt: 5, dialect: DIALECT }
        const fromStored = buildSnapshot(stored(pages), options)
        expect(readable(fromStored)).toEqual(readable(buildSnapshot(pages, options)))
        // A page replaced in place over a loaded snapshot, as a refresh does.
        const target = pages[pick % pages.length]!
        const replacement = { ...target, listItem: `${target.listItem} `, detail: '{"edited": true}' }
        const patched = patchSnapshot(fromStored, new Map([[target.id, replacement]]), { ...options, version: 2 })
        const rebuilt = buildSnapshot(pages.map((p) => (p.id === target.id ? replacement : p)), { ...options, version: 2 })
        expect(readable(patched)).toEqual(readable(rebuilt))
      }),
      { numRuns: 60 },
    )
  })
})
