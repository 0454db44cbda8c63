/**
 * The readers of the two formats earlier builds wrote, kept so that a snapshot such a build
 * stored (in Redis or SNAPSHOT_FILE, both of which outlive a deploy) is still served warm by this
 * one, before its first sync: docs/operations.md, "The snapshot file", promises it. Nothing
 * writes these formats any more (tests write them with `test/helpers/snapshot-bytes.ts`). Once
 * no stored snapshot can be older than format 4 (every deploy that may still find one is past),
 * this module and its two versions in `snapshot-framing.ts` can go: an instance then refuses such
 * a snapshot with a warning and syncs from the CMS, cold but not wrong.
 *
 * Format 3: the same rows and texts as format 4 (`snapshot-reader.ts`), but for the whole
 * snapshot at once: one part of every page's fields row, one of every page's texts, then the
 * details in parts of about one slab that end on a page boundary, with no group table.
 *
 * Format 2: the pages are newline-delimited JSON, one line per page in tree order
 * (`page-lines.ts`). Loading one hashes and copies every page again.
 * @module
 */
import type { SyncedPage } from '../tree/build-snapshot.js'
import { readPage } from './page-lines.js'
import { refuse } from './refusal.js'
import { inflate } from './snapshot-compression.js'
import type { Frame } from './snapshot-framing.js'
import { readRows, type DecodeResult, type PartsLayout, type SplitParts } from './snapshot-reader.js'

/** Format 3: the fields part, the texts part, then the details parts. */
export const WHOLE_LAYOUT: PartsLayout = {
  isDetails: (index) => index >= 2,
  pagesOf: pagesOfWhole,
}

/**
 * Format 3's pages: the fields part (one JSON array, a row per page), the texts part (every
 * listing item's UTF-8 bytes, in page order) and the details parts (every detail's bytes, in page
 * order, a part ending on a page boundary), read as format 4 reads one group.
 */
function pagesOfWhole({ heads, details }: SplitParts, frame: Frame): DecodeResult {
  const { pageCount, ...rest } = frame.metadata
  const pages = new Array<SyncedPage>(pageCount)
  const [fieldsPart, texts] = heads as [Buffer, Buffer]
  const rows = JSON.parse(fieldsPart.toString('utf8')) as unknown
  if (!Array.isArray(rows) || rows.length !== pageCount) return refuse(`snapshot holds ${Array.isArray(rows) ? rows.length : 0} of its ${pageCount} pages`)
  const why = readRows(rows, texts, details, pages, 0)
  return why === undefined ? { ok: true, decoded: { ...rest, pages } } : refuse(why)
}

/** Format 2: the pages as JSON lines, decompressed at once. */
export function decodeLines(frame: Frame): DecodeResult {
  const raw = inflate(frame.compression, frame.pages, frame.rawLength)
  if (!Buffer.isBuffer(raw)) return raw
  const { pageCount, ...rest } = frame.metadata
  const pages: SyncedPage[] = []
  let start = 0
  for (let index = 0; index < pageCount; index++) {
    const end = raw.indexOf(0x0a, start)
    if (end < 0) return refuse(`snapshot holds ${index} of its ${pageCount} pages`)
    const page = readPage(JSON.parse(raw.toString('utf8', start, end)) as unknown)
    if (!page) return refuse(`snapshot page #${index} is malformed`)
    pages.push(page)
    start = end + 1
  }
  if (start !== raw.length) return refuse('snapshot has data after its last page')
  return { ok: true, decoded: { ...rest, pages } }
}
