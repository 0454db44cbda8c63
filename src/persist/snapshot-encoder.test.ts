import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { buildSnapshot, carryOver, patchSnapshot, type SyncedPage } from '../tree/build-snapshot.js'
import { bytesOf } from '../tree/detail-body.js'
import type { Dialect, PageRecord, Snapshot } from '../tree/snapshot.js'
import { loadSnapshot, readSnapshotMetadata, tryDecodeSnapshot, tryDecodeSnapshotAsync, type SnapshotCompression } from './snapshot-codec.js'
import { createSnapshotEncoder, encodeSnapshotOfAsync, type EncodedSnapshot, type SnapshotChunk } from './snapshot-encoder.js'
import { groupEnds, type GroupRule } from './snapshot-groups.js'
import { detailBytes, pageFields, withDetailBytes } from '../../test/helpers/snapshot-bytes.js'

const ORIGIN = { upstreamUrl: 'https://cms.example.com/wagtail', baseUrl: 'https://api.example.com' }
const DIALECT: Dialect = { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: false, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' }
/** Groups of a few pages at ~300-byte details, so that small trees have many of them. */
const SMALL_GROUPS: GroupRule = { minBytes: 1200, oneIn: 4, maxBytes: 8000 }

function page(id: number, parentId: number | null, extra: Partial<SyncedPage> = {}): SyncedPage {
  return {
    id, parentId, type: 'blog.BlogPage', title: `Page ${id}`, slug: `page-${id}`, showInMenus: id % 2 === 0, seoTitle: id % 3 === 0 ? 'SEO ☃' : '',
    searchDescription: '', listItem: `{"id": ${id}, "title": "Page ${id}"}`,
    ...(id % 7 === 0 ? { typedListItem: `{"id": ${id}, "html_url": "https://elsewhere.example/${id}/"}` } : {}),
    detail: `{"id": ${id}, "body": "${'lorem ipsum déjà '.repeat(10 + (id % 13))}", "meta": {"detail_url": "https://api.example.com/api/v1/cms/pages/${id}/"}}`,
    ...extra,
  }
}

/** A root, ten sections, and `count` pages below them, in tree order. */
function treePages(count: number): SyncedPage[] {
  const pages: SyncedPage[] = [page(1, null, { type: 'home.HomePage' })]
  const sections = Array.from({ length: 10 }, (_, i) => 2 + i)
  for (const section of sections) {
    pages.push(page(section, 1))
    for (let id = 100 + section * 1000; id < 100 + section * 1000 + count / 10; id++) pages.push(page(id, section))
  }
  return pages
}

function build(pages: readonly SyncedPage[], version = 1): Snapshot {
  return buildSnapshot(pages, { version, syncedAt: 1_700_000_000_000 + version, dialect: DIALECT })
}

/** A page changed in place, as a refresh delivers it: new texts, the digest to be computed again. */
function edited(record: PageRecord, change: Partial<SyncedPage>): SyncedPage {
  const { digest: _digest, from: _from, ...rest } = carryOver(record)
  return { ...rest, ...change }
}

function retitled(previous: Snapshot, order: number, title: string): Snapshot {
  const record = previous.pages.at(order)!
  const page = edited(record, { title, listItem: `{"id": ${record.id}, "title": ${JSON.stringify(title)}}` })
  return patchSnapshot(previous, new Map([[record.id, page]]), { version: previous.version + 1, syncedAt: previous.syncedAt + 1, dialect: DIALECT })
}

/** The snapshot with `inserted` placed at `order` and every other page carried over. */
function withInserted(previous: Snapshot, order: number, inserted: SyncedPage): Snapshot {
  const pages = previous.pages.slice().map(carryOver)
  pages.splice(order, 0, inserted)
  return build(pages, previous.version + 1)
}

/** Every field, digest and detail byte of the decoded snapshot is the original's, and it rebuilds to the same fingerprint. */
function expectRoundTrip(buf: Buffer, original: Snapshot): void {
  const decoded = tryDecodeSnapshot(buf)
  if (!decoded.ok) throw new Error(decoded.reason)
  expect(decoded.decoded.formatVersion).toBe(4)
  expect(decoded.decoded.pages).toHaveLength(original.pages.length)
  decoded.decoded.pages.forEach((decodedPage, index) => {
    const record = original.pages.at(index)!
    const detail = decodedPage.detail
    const originalDetail = record.detail
    expect(pageFields(decodedPage)).toEqual(pageFields(carryOver(record)))
    expect(decodedPage.typedListItem).toBe(record.typedListItem)
    expect(typeof detail !== 'string' && bytesOf(detail).equals(bytesOf(originalDetail))).toBe(true)
  })
  const loaded = loadSnapshot(buf, ORIGIN)
  if (!loaded.ok) throw new Error(loaded.reason)
  expect(loaded.snapshot.fingerprint).toBe(original.fingerprint)
  expect(loaded.snapshot.version).toBe(original.version)
  expect(loaded.snapshot.syncedAt).toBe(original.syncedAt)
}

describe('format 4', () => {
  it('round-trips every field, digest, typed listing item and detail byte, whatever the compression', async () => {
    const original = build(treePages(300))
    for (const compression of ['brotli', 'gzip', 'none'] as const) {
      const { buf, groups, reused } = await createSnapshotEncoder({ groupRule: SMALL_GROUPS }).encode(original, ORIGIN, { compression })
      expect(groups).toBeGreaterThan(20)
      expect(reused).toBe(0)
      expect(buf.readUInt8(7)).toBe(4)
      expectRoundTrip(buf, original)
      expect(withDetailBytes(await tryDecodeSnapshotAsync(buf))).toEqual(withDetailBytes(tryDecodeSnapshot(buf)))
      expect(readSnapshotMetadata(buf)).toMatchObject({ ok: true, metadata: { formatVersion: 4, pageCount: original.pages.length, fingerprint: original.fingerprint } })
    }
  })

  it('keeps each detail as a view of its group\'s details part: one buffer per group, none per page', async () => {
    const original = build(treePages(300))
    // Parts of 4 KB and more: a smaller one is decompressed into Node's shared pool of small buffers.
    const { buf, groups } = await createSnapshotEncoder({ groupRule: { minBytes: 5000, oneIn: 4, maxBytes: 16_000 } }).encode(original, ORIGIN)
    expect(groups).toBeGreaterThan(5)
    const decoded = tryDecodeSnapshot(buf)
    if (!decoded.ok) throw new Error(decoded.reason)
    const holders = new Set(decoded.decoded.pages.map((p) => detailBytes(p).buffer))
    expect(holders.size).toBe(groups)
  })

  it('without compression, the decoded details do not keep the stored buffer alive', async () => {
    const stored = await encodeSnapshotOfAsync(build(treePages(50)), ORIGIN, { compression: 'none' })
    const decoded = tryDecodeSnapshot(stored)
    if (!decoded.ok) throw new Error(decoded.reason)
    for (const p of decoded.decoded.pages) expect(detailBytes(p).buffer).not.toBe(stored.buffer)
  })

  it('the default rule makes groups of about 160–256 KiB of ~2 KB details, each within a slab', () => {
    const pages = Array.from({ length: 20_000 }, (_, i) => ({ detail: { length: 1500 + ((i * 7919) % 1000) }, digest: `d${i * 2654435761}` }))
    const ends = groupEnds(pages)
    const sizes: number[] = []
    let start = 0
    for (const end of ends) {
      sizes.push(pages.slice(start, end).reduce((sum, p) => sum + p.detail.length, 0))
      start = end
    }
    const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length
    expect(mean).toBeGreaterThan(170 * 1024)
    expect(mean).toBeLessThan(210 * 1024)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(256 * 1024)
    expect(sizes.slice(0, -1).every((size) => size >= 160 * 1024)).toBe(true)
  })

  it('gives a page larger than a slab a group of its own', () => {
    const rule: GroupRule = { minBytes: 100, oneIn: 1_000_000, maxBytes: 1000 }
    const pages = [300, 300, 5000, 300, 300].map((length, i) => ({ detail: { length }, digest: `x${i}` }))
    expect(groupEnds(pages, rule)).toEqual([2, 3, 5])
  })
})

/** The buffer with its metadata replaced and its checksum made right again. */
function withMetadata(buf: Buffer, change: (metadata: Record<string, unknown>) => unknown): Buffer {
  const length = buf.readUInt32BE(9)
  const metadata = Buffer.from(JSON.stringify(change(JSON.parse(buf.toString('utf8', 49, 49 + length)) as Record<string, unknown>)))
  const header = Buffer.from(buf.subarray(0, 49))
  header.writeUInt32BE(metadata.length, 9)
  const rest = buf.subarray(49 + length)
  createHash('sha256').update(header.subarray(0, 17)).update(metadata).update(rest).digest().copy(header, 17)
  return Buffer.concat([header, metadata, rest])
}

describe('refusing a format-4 buffer that is not intact', () => {
  it('refuses a change to any byte, and every truncation', async () => {
    const buf = await encodeSnapshotOfAsync(build(treePages(10)), ORIGIN)
    for (let index = 0; index < buf.length; index++) {
      const corrupt = Buffer.from(buf)
      corrupt[index] = corrupt[index]! ^ 0x01
      expect(tryDecodeSnapshot(corrupt).ok, `byte ${index}`).toBe(false)
    }
    for (let length = 0; length < buf.length; length += 7) expect(tryDecodeSnapshot(buf.subarray(0, length)).ok).toBe(false)
  })

  it('refuses a group table that does not fit its parts or pages, correctly sealed, without throwing', async () => {
    const buf = await createSnapshotEncoder({ groupRule: SMALL_GROUPS }).encode(build(treePages(100)), ORIGIN, { compression: 'gzip' })
    const groups = (metadata: Record<string, unknown>) => metadata['groups'] as [number, number][]
    const cases: Array<(metadata: Record<string, unknown>) => unknown> = [
      (m) => ({ ...m, groups: undefined }),
      (m) => ({ ...m, groups: groups(m).slice(1) }),
      (m) => ({ ...m, groups: groups(m).map(([pages, fields], i) => (i === 0 ? [pages + 1, fields] : [pages, fields])) }),
      (m) => ({ ...m, groups: groups(m).map(([pages, fields], i) => (i === 1 ? [pages - 1, fields] : i === 2 ? [pages + 1, fields] : [pages, fields])) }),
      (m) => ({ ...m, groups: groups(m).map(([pages, fields], i) => (i === 0 ? [pages, fields - 1] : [pages, fields])) }),
      (m) => ({ ...m, groups: groups(m).map(([pages, fields], i) => (i === 0 ? [pages, fields + 100_000] : [pages, fields])) }),
      (m) => ({ ...m, groups: groups(m).map(([pages], i) => (i === 0 ? [pages, -1] : [pages, 1])) }),
      (m) => ({ ...m, groups: groups(m).map(() => 'x') }),
      (m) => ({ ...m, parts: (m['parts'] as unknown[]).slice(0, -1) }),
    ]
    expect(tryDecodeSnapshot(withMetadata(buf.buf, (m) => m)).ok).toBe(true)
    for (const [index, change] of cases.entries()) {
      const forged = withMetadata(buf.buf, change)
      expect(() => tryDecodeSnapshot(forged)).not.toThrow()
      expect(tryDecodeSnapshot(forged).ok, `case ${index}`).toBe(false)
      expect((await tryDecodeSnapshotAsync(forged)).ok, `case ${index}, on the thread pool`).toBe(false)
    }
  })
})

describe('reusing the previous encoding', () => {
  it('gives the same bytes as an encoder that kept nothing', async () => {
    const first = build(treePages(300))
    const second = retitled(first, 150, 'Retitled')
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    await encoder.encode(first, ORIGIN)
    const again = await encoder.encode(second, ORIGIN)
    const fresh = await createSnapshotEncoder({ groupRule: SMALL_GROUPS }).encode(second, ORIGIN)
    expect(again.reused).toBeGreaterThan(0)
    expect(again.buf.equals(fresh.buf)).toBe(true)
    expect((await encodeSnapshotOfAsync(second, ORIGIN)).equals((await createSnapshotEncoder().encode(second, ORIGIN)).buf)).toBe(true)
  })

  it('compresses again only the group an edit touched', async () => {
    const first = build(treePages(300))
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    const before = await encoder.encode(first, ORIGIN)
    const same = await encoder.encode(first, ORIGIN)
    expect(same).toMatchObject({ groups: before.groups, reused: before.groups })
    expect(same.buf.equals(before.buf)).toBe(true)
    const second = retitled(first, 150, 'Retitled')
    const after = await encoder.encode(second, ORIGIN)
    expect(after.groups - after.reused).toBeLessThanOrEqual(1)
    expect(after.groups).toBeGreaterThan(20)
    expectRoundTrip(after.buf, second)
  })

  it('after a page is inserted, compresses again only the group or two around it', async () => {
    const first = build(treePages(300))
    const changed: number[] = []
    for (let order = 20; order < 300; order += 20) {
      const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
      await encoder.encode(first, ORIGIN)
      const second = withInserted(first, order, page(99_999, first.pages.at(order - 1)!.parentId))
      const after = await encoder.encode(second, ORIGIN)
      expect(after.groups).toBeGreaterThan(20)
      changed.push(after.groups - after.reused)
      if (order === 140) {
        expectRoundTrip(after.buf, second)
        // Removing it again finds the first encoding's groups but for the ones it touched.
        const third = build(second.pages.slice().filter((record) => record.id !== 99_999).map(carryOver), 3)
        const removed = await encoder.encode(third, ORIGIN)
        expect(removed.groups - removed.reused).toBeLessThanOrEqual(4)
      }
    }
    // Cuts depend on content, so the groups after the insert are found again: mostly one or two
    // groups change, a few more where the group holding the insert reached its minimum earlier.
    expect(Math.max(...changed)).toBeLessThanOrEqual(4)
    expect(changed.reduce((a, b) => a + b, 0) / changed.length).toBeLessThanOrEqual(2)
  })

  it('forgets what it kept when told to: the next encoding is whole, the same bytes', async () => {
    const first = build(treePages(100))
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    const before = await encoder.encode(first, ORIGIN)
    encoder.forget()
    const after = await encoder.encode(first, ORIGIN)
    expect(after.reused).toBe(0)
    expect(after.buf.equals(before.buf)).toBe(true)
  })

  it('keeps nothing across compressions: another compression is encoded whole', async () => {
    const first = build(treePages(100))
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    await encoder.encode(first, ORIGIN, { compression: 'brotli' })
    const gzip = await encoder.encode(first, ORIGIN, { compression: 'gzip' })
    expect(gzip.reused).toBe(0)
    const none = await encoder.encode(first, ORIGIN, { compression: 'none' })
    expect(none.reused).toBe(0)
    expect((await encoder.encode(first, ORIGIN, { compression: 'none' })).reused).toBe(0)
  })

  it('any sequence of edits, inserts and removals decodes to what was encoded, byte for byte as a fresh encoder writes it (property)', async () => {
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('retitle' as const), at: fc.nat(), title: fc.string({ maxLength: 12 }) }),
      fc.record({ kind: fc.constant('body' as const), at: fc.nat(), repeat: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), repeat: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 6 }), fc.constantFrom<SnapshotCompression>('brotli', 'gzip'), async (edits, compression) => {
        let snapshot = build(treePages(60))
        let nextId = 50_000
        const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
        await encoder.encode(snapshot, ORIGIN, { compression })
        for (const change of edits) {
          // Never the root, whose place is fixed.
          const at = 1 + (change.at % (snapshot.pages.length - 1))
          const record = snapshot.pages.at(at)!
          if (change.kind === 'retitle') snapshot = retitled(snapshot, at, change.title)
          else if (change.kind === 'body') {
            const page = edited(record, { detail: `{"id": ${record.id}, "body": "${'x'.repeat(change.repeat * 20)}"}` })
            snapshot = patchSnapshot(snapshot, new Map([[record.id, page]]), { version: snapshot.version + 1, syncedAt: 1, dialect: DIALECT })
          } else if (change.kind === 'insert') {
            snapshot = withInserted(snapshot, at, page(nextId++, record.parentId, { detail: `{"new": "${'y'.repeat(change.repeat * 20)}"}` }))
          } else if (snapshot.pages.slice().every((other) => other.parentId !== record.id)) {
            snapshot = build(snapshot.pages.slice().filter((other) => other !== record).map(carryOver), snapshot.version + 1)
          }
          const { buf } = await encoder.encode(snapshot, ORIGIN, { compression })
          expectRoundTrip(buf, snapshot)
          expect(buf.equals((await createSnapshotEncoder({ groupRule: SMALL_GROUPS }).encode(snapshot, ORIGIN, { compression })).buf)).toBe(true)
        }
      }),
      { numRuns: 40 },
    )
  })
})

/** The chunks cover `buf` in order without gaps, and each digest is the SHA-256 of its bytes. */
function expectChunksCover(encoded: EncodedSnapshot): readonly SnapshotChunk[] {
  const chunks = encoded.chunks!
  let at = 0
  for (const chunk of chunks) {
    expect(chunk.offset).toBe(at)
    expect(chunk.length).toBeGreaterThan(0)
    expect(chunk.digest).toBe(createHash('sha256').update(encoded.buf.subarray(chunk.offset, chunk.offset + chunk.length)).digest('base64url'))
    at += chunk.length
  }
  expect(at).toBe(encoded.buf.length)
  return chunks
}

describe('chunks', () => {
  it('cover the buffer in order, each known by the SHA-256 of its bytes, one per group after the metadata', async () => {
    for (const compression of ['brotli', 'gzip'] as const) {
      const encoded = await createSnapshotEncoder({ groupRule: SMALL_GROUPS }).encode(build(treePages(300)), ORIGIN, { compression })
      const chunks = expectChunksCover(encoded)
      expect(chunks.length).toBeGreaterThan(encoded.groups)
    }
  })

  it('a whole save after a one-page edit shares every chunk but the metadata\'s first, a table piece or two and the edited group', async () => {
    const first = build(treePages(300))
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    const before = expectChunksCover(await encoder.encode(first, ORIGIN))
    const after = expectChunksCover(await encoder.encode(retitled(first, 150, 'Retitled'), ORIGIN))
    const known = new Set(before.map((chunk) => chunk.digest))
    const fresh = after.filter((chunk) => !known.has(chunk.digest))
    expect(fresh.length).toBeGreaterThanOrEqual(2)
    expect(fresh.length).toBeLessThanOrEqual(5)
    expect(fresh.reduce((sum, chunk) => sum + chunk.length, 0)).toBeLessThan(after.at(-1)!.offset / 5)
  })

  it('a reused group keeps its chunk digest: the group chunks of an edit are the previous ones but the edited group\'s', async () => {
    const first = build(treePages(300))
    const encoder = createSnapshotEncoder({ groupRule: SMALL_GROUPS })
    const before = await encoder.encode(first, ORIGIN)
    const same = await encoder.encode(first, ORIGIN)
    expect(same.reused).toBe(same.groups)
    expect(same.chunks).toEqual(before.chunks)
    const after = await encoder.encode(retitled(first, 150, 'Retitled'), ORIGIN)
    const groupChunks = (encoded: EncodedSnapshot) => encoded.chunks!.slice(-encoded.groups).map((chunk) => chunk.digest)
    const changed = groupChunks(after).filter((digest, index) => digest !== groupChunks(before)[index])
    expect(after.groups).toBe(before.groups)
    expect(changed).toHaveLength(after.groups - after.reused)
    expect(changed).toHaveLength(1)
  })

  it('none without compression: the buffer is written whole', async () => {
    const encoded = await createSnapshotEncoder().encode(build(treePages(30)), ORIGIN, { compression: 'none' })
    expect(encoded.chunks).toBeUndefined()
  })
})
