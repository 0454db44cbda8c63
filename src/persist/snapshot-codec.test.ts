import { brotliCompressSync, gzipSync } from 'node:zlib'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bytesOf } from '../tree/detail-body.js'
import { buildSnapshot, withTranslations, type SyncedPage } from '../tree/build-snapshot.js'
import { TranslationGroups } from '../tree/translations.js'
import type { Dialect, Snapshot } from '../tree/snapshot.js'
import { frame, loadSnapshot, readSnapshotMetadata, tryDecodeSnapshot, tryDecodeSnapshotAsync, type SnapshotCompression } from './snapshot-codec.js'
import { encodeSnapshotOfAsync } from './snapshot-encoder.js'
import { loadStoredChain } from './patch-chain.js'
import {
  decodeSnapshot, encodeFormat3, encodeSnapshot, encodeSnapshotOf, pagesOfSnapshot, snapshotFromDecoded, SNAPSHOT_FORMAT_VERSION, withDetailBytes, detailBytes, reseal, storedParts, pageFields, recordFields,
} from '../../test/helpers/snapshot-bytes.js'

const ORIGIN = { upstreamUrl: 'https://cms.example.com/wagtail', baseUrl: 'https://api.example.com' }
const DIALECT: Dialect = { limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: false, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' }

function page(id: number, parentId: number | null, extra: Partial<SyncedPage> = {}): SyncedPage {
  return {
    id, parentId, type: 'blog.BlogPage', title: `Page ${id}`, slug: `page-${id}`, showInMenus: id % 2 === 0, seoTitle: '',
    searchDescription: '', listItem: `{"id": ${id}}`, detail: `{"id": ${id}, "meta": {"detail_url": "https://api.example.com/api/v1/cms/pages/${id}/"}}`,
    ...extra,
  }
}

function smallSnapshot(): Snapshot {
  return buildSnapshot(
    [
      page(3, null, { type: 'home.HomePage', title: 'Home ☃', detail: '{"big": 123456789012345678901234567890, "ls": "\u2028\u2029"}' }),
      page(4, 3, { typedListItem: '{"id": 4, "html_url": "https://elsewhere.example/"}' }),
      page(6, 4),
      page(5, 3, { seoTitle: 'SEO', searchDescription: 'déjà vu' }),
    ],
    { version: 7, syncedAt: 1_700_000_000_123, dialect: DIALECT },
  )
}

/** Every observable part of two snapshots is the same, bytes included. */
function expectSameSnapshot(actual: Snapshot, expected: Snapshot): void {
  expect(actual.fingerprint).toBe(expected.fingerprint)
  expect(actual.version).toBe(expected.version)
  expect(actual.syncedAt).toBe(expected.syncedAt)
  expect(actual.dialect).toEqual(expected.dialect)
  expect(actual.rootId).toBe(expected.rootId)
  expect(actual.treeExact).toBe(expected.treeExact)
  expect([...actual.byPath]).toEqual([...expected.byPath])
  expect([...actual.types]).toEqual([...expected.types])
  expect(actual.pages.length).toBe(expected.pages.length)
  actual.pages.slice().forEach((record, index) => {
    const original = expected.pages.at(index)!
    const fields = recordFields(record)
    const originalFields = recordFields(original)
    expect(fields).toEqual(originalFields)
    expect(fields.typedListItem).toBe(originalFields.typedListItem)
    expect(bytesOf(record.detail).equals(bytesOf(original.detail))).toBe(true)
  })
}

/** A buffer in the stored layout with arbitrary contents and a valid checksum. */
function forge(parts: { version?: number; compression?: number; metadata: unknown; pages: string; rawLength?: number; compress?: SnapshotCompression }): Buffer {
  const metadata = Buffer.from(typeof parts.metadata === 'string' ? parts.metadata : JSON.stringify(parts.metadata))
  const raw = Buffer.from(parts.pages)
  const body = parts.compress === 'gzip' ? gzipSync(raw) : brotliCompressSync(raw)
  const header = Buffer.alloc(49)
  header.write('CMSSHLD', 0, 'latin1')
  header.writeUInt8(parts.version ?? SNAPSHOT_FORMAT_VERSION, 7)
  header.writeUInt8(parts.compression ?? (parts.compress === 'gzip' ? 1 : 2), 8)
  header.writeUInt32BE(metadata.length, 9)
  header.writeUInt32BE(parts.rawLength ?? raw.length, 13)
  return reseal(Buffer.concat([header, metadata, body]))
}

const goodMetadata = { ...ORIGIN, syncedAt: 1, version: 1, fingerprint: 'x', dialect: DIALECT, pageCount: 1 }
const goodLine = JSON.stringify([1, 'a.B', 't', 's', false, '', '', null, '{}', '{}'])

describe('encode and decode', () => {
  it('round-trips a snapshot: same fingerprint, same bytes per page', () => {
    const original = smallSnapshot()
    for (const compression of ['brotli', 'gzip'] as const) {
      const buf = encodeSnapshotOf(original, ORIGIN, { compression })
      expect(buf.subarray(0, 7).toString('latin1')).toBe('CMSSHLD')
      const loaded = loadSnapshot(buf, ORIGIN)
      if (!loaded.ok) throw new Error(loaded.reason)
      expectSameSnapshot(loaded.snapshot, original)
      expect(loaded.decoded.formatVersion).toBe(SNAPSHOT_FORMAT_VERSION)
      expect(loaded.decoded).toMatchObject({ ...ORIGIN, syncedAt: original.syncedAt, version: 7, fingerprint: original.fingerprint })
    }
  })

  it('keeps the translation groups, which the fingerprint covers, and reads a snapshot without them as not learned', async () => {
    const plain = smallSnapshot()
    const translated = withTranslations(plain, TranslationGroups.of([[4, 5]]), plain.version)
    expect(translated.fingerprint).not.toBe(plain.fingerprint)
    const loaded = loadSnapshot(await encodeSnapshotOfAsync(translated, ORIGIN, { compression: 'brotli' }), ORIGIN)
    if (!loaded.ok) throw new Error(loaded.reason)
    expect(loaded.snapshot.fingerprint).toBe(translated.fingerprint)
    expect(loaded.snapshot.translations?.groups).toEqual([[4, 5]])
    const without = loadSnapshot(await encodeSnapshotOfAsync(plain, ORIGIN, { compression: 'brotli' }), ORIGIN)
    if (!without.ok) throw new Error(without.reason)
    expect(without.snapshot.translations).toBeUndefined()
  })

  it('decodes exactly the pages that were encoded, typedListItem absent or present', () => {
    const pages = pagesOfSnapshot(smallSnapshot())
    const decoded = decodeSnapshot(encodeSnapshot({ pages, dialect: DIALECT, ...ORIGIN, syncedAt: 5, version: 2, fingerprint: 'f' }))
    expect(decoded?.pages).toEqual(pages)
    expect(decoded?.pages.map((p) => 'typedListItem' in p)).toEqual([false, true, false, false])
  })

  it('the async encoder (format 4) gives what a one-shot writer of format 2 gives', async () => {
    const original = smallSnapshot()
    const input = { pages: pagesOfSnapshot(original), dialect: DIALECT, ...ORIGIN, syncedAt: original.syncedAt, version: 7, fingerprint: original.fingerprint }
    for (const compression of ['brotli', 'gzip', 'none'] as const) {
      const expected = decodeSnapshot(encodeSnapshot(input, { compression: compression === 'none' ? 'gzip' : compression }))
      expect(expected).toBeDefined()
      expect(decodeSnapshot(await encodeSnapshotOfAsync(original, ORIGIN, { compression }))).toEqual({ ...expected, formatVersion: 4 })
      const loaded = loadSnapshot(await encodeSnapshotOfAsync(original, ORIGIN, { compression }), ORIGIN)
      if (!loaded.ok) throw new Error(loaded.reason)
      expectSameSnapshot(loaded.snapshot, original)
    }
  })

  it('format 4 keeps every page\'s stored digest, and its detail as bytes in a part, not a copy per page', async () => {
    const original = smallSnapshot()
    const result = tryDecodeSnapshot(await encodeSnapshotOfAsync(original, ORIGIN))
    if (!result.ok) throw new Error(result.reason)
    expect(result.decoded.pages.map((page) => page.digest)).toEqual(original.pages.slice().map((record) => record.digest))
    const details = result.decoded.pages.map(detailBytes)
    expect(details.map((detail) => detail.toString('utf8'))).toEqual(original.pages.slice().map((record) => record.detail.toString('utf8')))
    expect(new Set(details.map((detail) => detail.buffer)).size).toBe(1)
  })

  it('format 4 without compression does not keep the stored buffer alive', async () => {
    const original = smallSnapshot()
    const stored = await encodeSnapshotOfAsync(original, ORIGIN, { compression: 'none' })
    const result = tryDecodeSnapshot(stored)
    if (!result.ok) throw new Error(result.reason)
    for (const page of result.decoded.pages) expect(detailBytes(page).buffer).not.toBe(stored.buffer)
  })

  it('refuses a format-4 snapshot whose stored digest was changed, even correctly sealed', async () => {
    const original = smallSnapshot()
    const stored = await encodeSnapshotOfAsync(original, ORIGIN, { compression: 'none' })
    const digest = Buffer.from(original.pages.at(1)!.digest)
    const at = stored.indexOf(digest)
    const forged = Buffer.from(stored)
    forged.write(digest.toString().replace(/^./, (c) => (c === 'A' ? 'B' : 'A')), at)
    const loaded = loadSnapshot(reseal(forged), ORIGIN)
    expect(loaded).toMatchObject({ ok: false, reason: expect.stringContaining('rebuilt fingerprint') })
  })

  it('decoding on the thread pool gives what decoding in one go gives, in every format', async () => {
    const original = smallSnapshot()
    const input = { pages: pagesOfSnapshot(original), dialect: DIALECT, ...ORIGIN, syncedAt: original.syncedAt, version: 7, fingerprint: original.fingerprint }
    const buffers = [
      ...await Promise.all((['brotli', 'gzip', 'none'] as const).map((compression) => encodeSnapshotOfAsync(original, ORIGIN, { compression }))),
      ...(['brotli', 'gzip', 'none'] as const).map((compression) => encodeFormat3(input, { compression, detailPartBytes: 100 })),
      encodeSnapshotOf(original, ORIGIN),
    ]
    for (const buf of buffers) {
      const together = tryDecodeSnapshot(buf)
      expect(together.ok).toBe(true)
      expect(withDetailBytes(await tryDecodeSnapshotAsync(buf))).toEqual(withDetailBytes(together))
    }
  })

  it('still reads format 3: every field, the stored digests, details as views of their parts', () => {
    const pages: SyncedPage[] = [page(1, null, { typedListItem: '{"id": 1, "typed": true}' })]
    for (let id = 2; id <= 40; id++) pages.push(page(id, id === 2 || id % 3 === 0 ? 1 : 2, { detail: `{"id": ${id}, "body": "${'déjà vu '.repeat(id)}"}` }))
    const original = buildSnapshot(pages, { version: 4, syncedAt: 9, dialect: DIALECT })
    const input = { pages: pagesOfSnapshot(original), dialect: DIALECT, ...ORIGIN, syncedAt: 9, version: 4, fingerprint: original.fingerprint }
    for (const compression of ['brotli', 'gzip', 'none'] as const) {
      const buf = encodeFormat3(input, { compression, detailPartBytes: 1000 })
      expect(buf.readUInt8(7)).toBe(3)
      const loaded = loadSnapshot(buf, ORIGIN)
      if (!loaded.ok) throw new Error(loaded.reason)
      expect(loaded.decoded.formatVersion).toBe(3)
      expectSameSnapshot(loaded.snapshot, original)
      expect(loaded.decoded.pages.map((p) => p.digest)).toEqual(original.pages.slice().map((record) => record.digest))
      const holders = new Set(loaded.decoded.pages.map((p) => detailBytes(p).buffer))
      expect(holders.size).toBeGreaterThan(1)
      expect(holders.size).toBeLessThan(pages.length)
      expect(decodeSnapshot(buf)?.pages).toEqual(pagesOfSnapshot(original))
    }
  })

  it('refuses, loading either way, a head part that does not decompress', async () => {
    const stored = await encodeSnapshotOfAsync(smallSnapshot(), ORIGIN, { compression: 'gzip' })
    const broken = Buffer.from(stored)
    // The first part is a group's head; its last 8 bytes are gzip's check.
    const [, headEnd] = storedParts(stored)[0]!
    broken.fill(0, headEnd - 8, headEnd)
    const result = await tryDecodeSnapshotAsync(reseal(broken))
    expect(result).toMatchObject({ ok: false, reason: expect.stringContaining('malformed snapshot') })
    expect(tryDecodeSnapshot(reseal(broken))).toMatchObject({ ok: false, reason: expect.stringContaining('malformed snapshot') })
  })

  it('keeps a details part compressed until a page of it is read; one that does not decompress fails each read of its pages, naming the part', async () => {
    const stored = await encodeSnapshotOfAsync(smallSnapshot(), ORIGIN, { compression: 'gzip' })
    const good = loadSnapshot(stored, ORIGIN)
    if (!good.ok) throw new Error(good.reason)
    expect(good.snapshot.pages.slice().every((record) => !Buffer.isBuffer(record.detail))).toBe(true)
    expect(bytesOf(good.snapshot.byId.get(3)!.detail).toString()).toBe('{"big": 123456789012345678901234567890, "ls": "\u2028\u2029"}')
    // The same Buffer on every read: answers and ETags are remembered by body.
    expect(bytesOf(good.snapshot.byId.get(3)!.detail)).toBe(bytesOf(good.snapshot.byId.get(3)!.detail))

    const broken = Buffer.from(stored)
    broken.fill(0, broken.length - 8)
    for (const result of [tryDecodeSnapshot(reseal(broken)), await tryDecodeSnapshotAsync(reseal(broken))]) {
      if (!result.ok) throw new Error(result.reason)
      const page = result.decoded.pages[0]!
      if (typeof page.detail === 'string') throw new Error('a decoded detail is never text')
      expect(page.detail.length).toBeGreaterThan(0)
      const detail = page.detail
      expect(() => bytesOf(detail)).toThrow(/^stored snapshot details part #1 could not be read: /)
      expect(() => bytesOf(detail)).toThrow(/details part #1/)
    }
  })

  it('the async encoder handles a payload of many slices', async () => {
    const pages: SyncedPage[] = [page(1, null)]
    for (let id = 2; id <= 300; id++) pages.push(page(id, 1, { detail: `{"id": ${id}, "body": "${'x\u2028y '.repeat(2000)}"}` }))
    const original = buildSnapshot(pages, { version: 1, syncedAt: 1, dialect: DIALECT })
    const loaded = loadSnapshot(await encodeSnapshotOfAsync(original, ORIGIN), ORIGIN)
    if (!loaded.ok) throw new Error(loaded.reason)
    expectSameSnapshot(loaded.snapshot, original)
  })

  it('reads the metadata without the pages', () => {
    const original = smallSnapshot()
    const result = readSnapshotMetadata(encodeSnapshotOf(original, ORIGIN))
    expect(result).toEqual({
      ok: true,
      metadata: { ...ORIGIN, syncedAt: original.syncedAt, fullSyncedAt: original.fullSyncedAt, version: 7, fingerprint: original.fingerprint, dialect: DIALECT, pageCount: 4, formatVersion: SNAPSHOT_FORMAT_VERSION },
      snapshot: { checked: expect.any(Object) },
    })
  })

  it('keeps the language every page has on a CMS without i18n, and reads a dialect stored without it as not known', async () => {
    const withLocale = buildSnapshot(pagesOfSnapshot(smallSnapshot()), { version: 7, syncedAt: 1, dialect: { ...DIALECT, unlistedLocale: 'pt-br' } })
    expect(withLocale.fingerprint).not.toBe(smallSnapshot().fingerprint)
    const loaded = loadSnapshot(await encodeSnapshotOfAsync(withLocale, ORIGIN), ORIGIN)
    if (!loaded.ok) throw new Error(loaded.reason)
    expectSameSnapshot(loaded.snapshot, withLocale)
    expect(loaded.snapshot.dialect.unlistedLocale).toBe('pt-br')
    const without = loadSnapshot(await encodeSnapshotOfAsync(smallSnapshot(), ORIGIN), ORIGIN)
    if (!without.ok) throw new Error(without.reason)
    expect('unlistedLocale' in without.snapshot.dialect).toBe(false)
  })

  it('decodes what the metadata read checked without checking the whole buffer again', () => {
    const original = smallSnapshot()
    const buf = encodeSnapshotOf(original, ORIGIN)
    const read = readSnapshotMetadata(buf)
    if (!read.ok) throw new Error(read.reason)
    // Spoil the stored checksum (header bytes 17 to 48) after the read: a second check would refuse.
    buf[20] = buf[20]! ^ 0xff
    expect(tryDecodeSnapshot(buf)).toEqual({ ok: false, reason: 'snapshot checksum mismatch (corrupted or truncated)' })
    const loaded = loadStoredChain(read.snapshot, [], ORIGIN).result
    if (!loaded.ok) throw new Error(loaded.reason)
    expectSameSnapshot(loaded.snapshot, original)
  })

  it('round-trips random trees with any text (property)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.constantFrom('', '\u2028', '\u2029', '\u0000', '"\\/\n\r\t', '\ud83d\ude00', '\ud800 lone', 'x\udfff', '\ufeff', '12345678901234567890123456789'),
    )
    const number = fc.constantFrom('12345678901234567890123456789', '-0', '1e400', '0.1000000000000000055511151231257827', '9007199254740993', '1E-7')
    const arbitraryFields = fc.record({
      type: fc.constantFrom('home.HomePage', 'blog.BlogPage', 'wagtailcore.Page'),
      title: text, slug: text, seoTitle: text, searchDescription: text, showInMenus: fc.boolean(),
      listItem: fc.tuple(text, number).map(([t, n]) => `{\n            "id": ${n},\n            "title": ${JSON.stringify(t)}\n        }`),
      typedListItem: fc.option(text, { nil: undefined }),
      detail: fc.tuple(text, number, text).map(([a, n, b]) => `{"title": "${a}", "n": ${n}, "raw": ${JSON.stringify(b)}}`),
    })
    // Each page hangs below one placed before it (or, rarely, nowhere: an orphan below an unpublished page).
    const tree = fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 9 }), arbitraryFields), { minLength: 0, maxLength: 25 })
    fc.assert(
      fc.property(arbitraryFields, tree, fc.constantFrom<SnapshotCompression>('brotli', 'gzip'), fc.nat(), (rootFields, rest, compression, syncedAt) => {
        const pages: SyncedPage[] = [{ ...rootFields, id: 1, parentId: null }]
        rest.forEach(([choice, orphanRoll, fields], index) => {
          const parentId = orphanRoll === 0 ? null : pages[choice % pages.length]!.id
          pages.push({ ...fields, id: index + 2, parentId })
        })
        const clean = pages.map((p) => (p.typedListItem === undefined ? (({ typedListItem: _, ...r }) => r)(p) : p))
        const original = buildSnapshot(clean, { version: 3, syncedAt, dialect: { ...DIALECT, limitMax: null } })
        const loaded = loadSnapshot(encodeSnapshotOf(original, ORIGIN, { compression }), ORIGIN)
        if (!loaded.ok) throw new Error(loaded.reason)
        expectSameSnapshot(loaded.snapshot, original)
      }),
      { numRuns: 150 },
    )
  })

  it('round-trips 10,000 pages', () => {
    const pages: SyncedPage[] = [page(1, null)]
    for (let id = 2; id <= 10_000; id++) {
      pages.push(page(id, id <= 100 ? 1 : 2 + (id % 99), { detail: `{"id": ${id}, "body": "${'lorem ipsum '.repeat(100)}", "n": 1e400}` }))
    }
    const original = buildSnapshot(pages, { version: 1, syncedAt: 1, dialect: DIALECT })
    const loaded = loadSnapshot(encodeSnapshotOf(original, ORIGIN), ORIGIN)
    if (!loaded.ok) throw new Error(loaded.reason)
    expect(loaded.snapshot.fingerprint).toBe(original.fingerprint)
    expect(loaded.snapshot.pages.length).toBe(10_000)
  })
})

describe('refusing what is not an intact snapshot', () => {
  const buf = encodeSnapshotOf(smallSnapshot(), ORIGIN)

  it('refuses a change to any byte', () => {
    for (let index = 0; index < buf.length; index++) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const corrupt = Buffer.from(buf)
        corrupt[index] = corrupt[index]! ^ mask
        expect(decodeSnapshot(corrupt), `byte ${index} ^ ${mask}`).toBeUndefined()
      }
    }
  })

  it('refuses every truncation and anything appended', () => {
    for (let length = 0; length < buf.length; length++) expect(decodeSnapshot(buf.subarray(0, length)), `length ${length}`).toBeUndefined()
    expect(decodeSnapshot(Buffer.concat([buf, Buffer.from([0])]))).toBeUndefined()
  })

  it('says why: checksum, truncation, magic', () => {
    expect(tryDecodeSnapshot(buf.subarray(0, buf.length - 1))).toEqual({ ok: false, reason: 'snapshot checksum mismatch (corrupted or truncated)' })
    expect(tryDecodeSnapshot(buf.subarray(0, 20))).toMatchObject({ ok: false, reason: expect.stringContaining('truncated') })
    expect(tryDecodeSnapshot(Buffer.from('{"pages": []}'))).toMatchObject({ ok: false, reason: expect.stringContaining('magic') })
    expect(tryDecodeSnapshot(Buffer.alloc(0))).toMatchObject({ ok: false })
  })

  it('refuses another format version, even correctly sealed', () => {
    const other = Buffer.from(buf)
    other.writeUInt8(5, 7)
    expect(tryDecodeSnapshot(reseal(other))).toEqual({ ok: false, reason: 'snapshot format version 5; this build reads versions 2, 3 and 4' })
    expect(decodeSnapshot(forge({ version: 0, metadata: goodMetadata, pages: `${goodLine}\n` }))).toBeUndefined()
  })

  it('accepts a well-formed forged buffer (the forge itself is right)', () => {
    expect(decodeSnapshot(forge({ metadata: goodMetadata, pages: `${goodLine}\n` }))?.pages).toHaveLength(1)
    expect(decodeSnapshot(forge({ metadata: goodMetadata, pages: `${goodLine}\n`, compress: 'gzip' }))?.pages).toHaveLength(1)
  })

  it('refuses correctly sealed buffers whose contents are malformed, without throwing', () => {
    const cases: Array<Parameters<typeof forge>[0]> = [
      { metadata: goodMetadata, pages: goodLine }, // unterminated line
      { metadata: goodMetadata, pages: `${goodLine}\n${goodLine}\n` }, // more pages than counted
      { metadata: { ...goodMetadata, pageCount: 2 }, pages: `${goodLine}\n` }, // fewer
      { metadata: goodMetadata, pages: '[1, 2\n' }, // not JSON
      { metadata: goodMetadata, pages: `${JSON.stringify([1.5, 'a.B', 't', 's', false, '', '', null, '{}', '{}'])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify(['1', 'a.B', 't', 's', false, '', '', null, '{}', '{}'])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify([1, 'a.B', 't', 's', 0, '', '', null, '{}', '{}'])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify([1, 'a.B', 't', 's', false, '', '', 'x', '{}', '{}'])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify([1, 'a.B', 't', 's', false, '', '', null, '{}', {}])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify([1, 'a.B', 't', 's', false, '', '', null, '{}', '{}', null])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify([1, 'a.B', 't', 's', false, '', '', null, '{}'])}\n` },
      { metadata: goodMetadata, pages: `${JSON.stringify({ id: 1 })}\n` },
      { metadata: '{"upstreamUrl": ', pages: `${goodLine}\n` },
      { metadata: '[]', pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, upstreamUrl: 1 }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, syncedAt: 'now' }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, version: -1 }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, fingerprint: '' }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, pageCount: 1.5 }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, dialect: { ...DIALECT, limitMax: '20' } }, pages: `${goodLine}\n` },
      { metadata: { ...goodMetadata, dialect: null }, pages: `${goodLine}\n` },
      { metadata: goodMetadata, pages: `${goodLine}\n`, compression: 9 },
      { metadata: goodMetadata, pages: `${goodLine}\n`, compression: 1 }, // brotli bytes labelled gzip
      { metadata: goodMetadata, pages: `${goodLine}\n`, rawLength: 5 }, // bigger than the header says
      { metadata: goodMetadata, pages: `${goodLine}\n`, rawLength: 10_000 }, // smaller than the header says
    ]
    for (const [index, parts] of cases.entries()) {
      const forged = forge(parts)
      expect(() => tryDecodeSnapshot(forged)).not.toThrow()
      expect(tryDecodeSnapshot(forged).ok, `case ${index}`).toBe(false)
    }
    // A metadata length running past the end.
    const long = Buffer.from(forge({ metadata: goodMetadata, pages: `${goodLine}\n` }))
    long.writeUInt32BE(0xffff_ffff, 9)
    expect(tryDecodeSnapshot(reseal(long)).ok).toBe(false)
  })

  it('refuses a stored page row (formats 3 and 4) whose fields are malformed, without throwing', () => {
    // One group of one page, stored uncompressed: its row, its listing text, its detail.
    const listItem = '{"id": 1}'
    const detail = '{"id": 1}'
    const forgeRow = (row: unknown[]): Buffer => {
      const fields = Buffer.from(JSON.stringify([row]))
      const head = Buffer.concat([fields, Buffer.from(listItem)])
      const details = Buffer.from(detail)
      const metadata = Buffer.from(JSON.stringify({ ...goodMetadata, parts: [[head.length, head.length], [details.length, details.length]], groups: [[1, fields.length]] }))
      return frame('none', metadata, head.length + details.length, [head, details])
    }
    const row = (changes: Record<number, unknown> = {}): unknown[] => {
      const good: unknown[] = [1, 'a.B', 't', 's', false, '', '', null, 'digest', listItem.length, -1, detail.length]
      for (const [at, value] of Object.entries(changes)) good[Number(at)] = value
      return good
    }
    const decoded = tryDecodeSnapshot(forgeRow(row()))
    if (!decoded.ok) throw new Error(decoded.reason)
    expect(decoded.decoded.pages.map(pageFields)).toEqual([
      { id: 1, type: 'a.B', title: 't', slug: 's', showInMenus: false, seoTitle: '', searchDescription: '', parentId: null, listItem, digest: 'digest' },
    ])
    expect(detailBytes(decoded.decoded.pages[0]!)).toEqual(Buffer.from(detail))
    const malformed = [{ 0: 1.5 }, { 0: '1' }, { 1: null }, { 2: 5 }, { 3: [] }, { 4: 0 }, { 5: false }, { 6: {} }, { 7: 'x' }, { 7: 2.5 }, { 8: '' }, { 9: -1 }, { 10: 'no' }, { 11: 1.5 }]
    for (const changes of malformed) {
      const forged = forgeRow(row(changes))
      expect(() => tryDecodeSnapshot(forged)).not.toThrow()
      expect(tryDecodeSnapshot(forged), JSON.stringify(changes)).toMatchObject({ ok: false, reason: 'snapshot page #0 is malformed' })
    }
  })

  it('never throws on arbitrary bytes, sealed or not (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, sealed) => {
        let buf: Buffer = Buffer.from(bytes)
        if (sealed) {
          // Magic and version right, then random compression, lengths and body, with a valid checksum.
          const header = Buffer.alloc(49)
          header.write('CMSSHLD', 0, 'latin1')
          header.writeUInt8(SNAPSHOT_FORMAT_VERSION, 7)
          buf.copy(header, 8, 0, 9)
          buf = reseal(Buffer.concat([header, buf.subarray(9)]))
        }
        expect(tryDecodeSnapshot(buf).ok).toBe(false)
      }),
    )
  })
})

describe('loading under a configuration', () => {
  const original = smallSnapshot()
  const buf = encodeSnapshotOf(original, ORIGIN)

  it('refuses a snapshot from another UPSTREAM_URL, with the reason', () => {
    expect(loadSnapshot(buf, { ...ORIGIN, upstreamUrl: 'https://other-cms.example.com/wagtail' })).toEqual({
      ok: false,
      reason: 'snapshot was synced from UPSTREAM_URL https://cms.example.com/wagtail, not https://other-cms.example.com/wagtail',
    })
  })

  it("points a snapshot made for another BASE_URL at this one: detail_urls moved, nothing else, the stored fingerprint kept", () => {
    const loaded = loadSnapshot(buf, { ...ORIGIN, baseUrl: 'https://api2.example.com/prefix' })
    if (!loaded.ok) throw new Error(loaded.reason)
    expect(loaded.snapshot.fingerprint).toBe(original.fingerprint)
    expect(loaded.snapshot.pages).toHaveLength(original.pages.length)
    for (const [index, page] of loaded.snapshot.pages.slice().entries()) {
      const before = original.pages.at(index)!
      const moved = (text: string) => text.replaceAll('"https://api.example.com/api/v1/cms/pages/', '"https://api2.example.com/prefix/api/v1/cms/pages/')
      expect(page.detail.toString('utf8')).toBe(moved(before.detail.toString('utf8')))
      expect(page.listItem).toBe(moved(before.listItem))
      expect(page.detail.toString('utf8')).not.toContain('https://api.example.com/')
      expect(page.digest).toBe(before.digest)
    }
  })

  it('loads a snapshot from another BASE_URL without making its detail bodies: each is rewritten on its first read', async () => {
    const stored = await encodeSnapshotOfAsync(original, ORIGIN, { compression: 'gzip' })
    const elsewhere = { ...ORIGIN, baseUrl: 'https://api2.example.com' }
    // A details part that does not decompress: loading still works, and only reads fail.
    const broken = Buffer.from(stored)
    broken.fill(0, broken.length - 8)
    const loaded = loadSnapshot(reseal(broken), elsewhere)
    if (!loaded.ok) throw new Error(loaded.reason)
    expect(loaded.snapshot.fingerprint).toBe(original.fingerprint)
    expect(() => bytesOf(loaded.snapshot.byId.get(4)!.detail)).toThrow(/^stored snapshot details part #1 could not be read: /)

    const good = loadSnapshot(stored, elsewhere)
    if (!good.ok) throw new Error(good.reason)
    const detail = good.snapshot.byId.get(4)!.detail
    const bytes = bytesOf(detail)
    expect(bytes.toString()).toContain('"https://api2.example.com/api/v1/cms/pages/4/"')
    expect(bytes.toString()).not.toContain('https://api.example.com/')
    // The same Buffer on every read, and its length is the rewritten body's.
    expect(bytesOf(detail)).toBe(bytes)
    expect(detail.length).toBe(bytes.length)
  })

  it('treats a trailing slash as the same URL', () => {
    expect(loadSnapshot(buf, { upstreamUrl: `${ORIGIN.upstreamUrl}/`, baseUrl: `${ORIGIN.baseUrl}/` }).ok).toBe(true)
  })

  it('passes on the decoder refusal', () => {
    expect(loadSnapshot(buf.subarray(0, 60), ORIGIN)).toEqual({ ok: false, reason: 'snapshot checksum mismatch (corrupted or truncated)' })
  })

  it('snapshotFromDecoded refuses a rebuilt fingerprint that differs from the stored one', () => {
    const decoded = decodeSnapshot(buf)!
    expect(snapshotFromDecoded(decoded)?.fingerprint).toBe(original.fingerprint)
    expect(snapshotFromDecoded({ ...decoded, fingerprint: 'something else' })).toBeUndefined()
    const pages = decoded.pages.map((p, i) => (i === 2 ? { ...p, detail: `${p.detail} ` } : p))
    expect(snapshotFromDecoded({ ...decoded, pages })).toBeUndefined()
    expect(snapshotFromDecoded({ ...decoded, dialect: { ...decoded.dialect, limitMax: 50 } })).toBeUndefined()
  })

  it('snapshotFromDecoded refuses pages that do not form a tree, without throwing', () => {
    const decoded = decodeSnapshot(buf)!
    expect(snapshotFromDecoded({ ...decoded, pages: [] })).toBeUndefined()
    const cyclic = decoded.pages.map((p) => (p.id === 4 ? { ...p, parentId: 6 } : p))
    expect(snapshotFromDecoded({ ...decoded, pages: cyclic })).toBeUndefined()
    // A stored snapshot whose fingerprint matches but whose tree is inconsistent is still refused.
    const forged = encodeSnapshot({ ...decoded, pages: cyclic })
    expect(loadSnapshot(forged, ORIGIN)).toMatchObject({ ok: false, reason: expect.stringContaining('inconsistent') })
  })
})
