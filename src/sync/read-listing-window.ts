/**
 * One window of the listing, from the CMS's bytes to its pages: the window's `total_count`, each
 * item's fields, and each item's text as the snapshot keeps it (its `detail_url`s pointed at the
 * proxy and, when the pass asked for them, the extra meta members cut out again:
 * `listing-fields.ts`). The body is parsed where it lies (`json-tape.ts`) and each item's text is
 * decoded once, from its bytes with the edits applied: every string a page keeps is a fresh one,
 * so no page pins the window's body.
 * @module
 */
import { createError } from '../errors.js'
import { JsonTape, TAPE_ARRAY, TAPE_OBJECT } from '../json/json-tape.js'
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import { editedLength, findTapeDetailUrlEdits, writeEdited, type ByteEdit } from '../json/tape-detail-urls.js'
import { EXTRA_LISTING_FIELDS, type ListingExtras } from './listing-fields.js'
import type { ListedPage } from './plan-refresh.js'
import { readTapeInteger, readTapeListItem, readTapeListItemWithFlags, type ListedFields } from './read-page-fields.js'

/** What a window says: its `total_count`, its pages in order and, asked for `locale`, the one code they all show (`null` when they differ). */
export interface WindowContent {
  readonly total: number
  readonly pages: ListedPage[]
  readonly locale?: string | null
}

const NO_BYTES = Buffer.alloc(0)

function isOneOf(tape: JsonTape, key: number, names: readonly string[]): boolean {
  for (const name of names) if (tape.keyIs(key, name)) return true
  return false
}

/** The extra members of an item's `meta`, each cut with the separator before it (it is never the first: `type` always leads `meta`). */
function extraFieldCuts(tape: JsonTape, item: number, names: readonly string[]): ByteEdit[] {
  const meta = tape.member(item, 'meta')
  const cuts: ByteEdit[] = []
  if (meta < 0 || tape.kind(meta) !== TAPE_OBJECT) return cuts
  const end = tape.next(meta)
  let previousValueEnd = -1
  for (let k = meta + 1; k < end; k = tape.next(k + 1)) {
    if (previousValueEnd >= 0 && isOneOf(tape, k, names)) cuts.push({ start: previousValueEnd, end: tape.end(k + 1), replacement: NO_BYTES })
    previousValueEnd = tape.end(k + 1)
  }
  return cuts
}

/** Two lists of edits, each in document order and never overlapping the other, as one. */
function merged(a: ByteEdit[], b: ByteEdit[]): ByteEdit[] {
  if (b.length === 0) return a
  if (a.length === 0) return b
  const out: ByteEdit[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.start <= b[j]!.start)) out.push(a[i++]!)
    else out.push(b[j++]!)
  }
  return out
}

/**
 * Reads windows of one pass: one tape and one scratch buffer for all of them, and the pass's type
 * names shared (a tree has a few dozen). A window is read with no wait in between, so one reader
 * serves windows read concurrently.
 */
export class ListingWindowReader {
  private readonly tape = new JsonTape()
  private scratch = Buffer.allocUnsafeSlow(16 * 1024)
  private readonly types = new Map<string, string>()
  private readonly names: readonly string[] | undefined

  constructor(
    private readonly rewriteUrl: RewriteUrl,
    private readonly extras: ListingExtras | undefined,
  ) {
    this.names = extras ? (extras.locale ? [...EXTRA_LISTING_FIELDS, 'locale'] : EXTRA_LISTING_FIELDS) : undefined
  }

  /** The window in `bytes` (a JSON body); `where` names it in errors. Throws `UPSTREAM_BAD_RESPONSE` for a body that is not a listing. */
  read(bytes: Buffer, where: string): WindowContent {
    const tape = this.tape
    try {
      tape.parse(bytes)
    } catch (error) {
      throw createError('UPSTREAM_BAD_RESPONSE', `${where}: malformed JSON`, { cause: error })
    }
    const total = readTapeInteger(tape, tape.path(0, ['meta', 'total_count']), 'meta.total_count', where)
    const items = tape.member(0, 'items')
    if (items < 0 || tape.kind(items) !== TAPE_ARRAY) throw createError('UPSTREAM_BAD_RESPONSE', `${where}: items is not an array`)
    const pages: ListedPage[] = []
    let locale: string | null | undefined = this.extras?.locale ? undefined : null
    let sameLocale = true
    for (let item = items + 1; item < tape.next(items); item = tape.next(item)) {
      const fields = this.extras ? readTapeListItemWithFlags(tape, item, where) : readTapeListItem(tape, item, where)
      pages.push(this.page(fields, this.itemText(item)))
      if (this.extras?.locale && sameLocale) {
        const node = tape.path(item, ['meta', 'locale'])
        const code = node >= 0 && tape.isString(node) ? tape.stringValue(node) : null
        if (code === null || (locale !== undefined && code !== locale)) sameLocale = false
        else locale = code
      }
    }
    if (!this.extras?.locale) return { total, pages }
    return { total, pages, locale: sameLocale && locale !== undefined ? locale : null }
  }

  /** The item's text as the snapshot keeps it, decoded from its edited bytes. */
  private itemText(item: number): string {
    const tape = this.tape
    const start = tape.start(item)
    const end = tape.end(item)
    const urls = findTapeDetailUrlEdits(tape, this.rewriteUrl, item)
    const edits = this.names ? merged(urls, extraFieldCuts(tape, item, this.names)) : urls
    if (edits.length === 0) return tape.bytes.toString('utf8', start, end)
    const length = editedLength(start, end, edits)
    if (length > this.scratch.length) this.scratch = Buffer.allocUnsafeSlow(Math.max(length, this.scratch.length * 2))
    writeEdited(tape.bytes, start, end, edits, this.scratch)
    return this.scratch.toString('utf8', 0, length)
  }

  private page(fields: ListedFields, listItem: string): ListedPage {
    let type = this.types.get(fields.type)
    if (type === undefined) {
      type = fields.type
      this.types.set(type, type)
    }
    // Written out, not spread: one object per page of the tree.
    const { id, title, slug, htmlUrl, flags } = fields
    return flags ? { id, type, title, slug, htmlUrl, flags, listItem } : { id, type, title, slug, htmlUrl, listItem }
  }
}
