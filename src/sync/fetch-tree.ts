/**
 * The reads a sync is made of (`sync-tree.ts` puts them together): the listing in tree order, page
 * by page at the CMS's largest page size; the details of given pages with bounded concurrency; a
 * type's own listing. Everything that would make the result a mix of two moments (a count that drifts while paging, a page listed twice, a page
 * that changed or vanished between its listing and its detail) fails the fetch.
 * @module
 */
import { createHash } from 'node:crypto'
import { createError, isProxyError } from '../errors.js'
import type { RewriteUrl } from '../json/rewrite-detail-urls.js'
import { bytesTaker } from '../json/byte-slabs.js'
import { JsonTape } from '../json/json-tape.js'
import { editedLength, findTapeDetailUrlEdits, writeEdited } from '../json/tape-detail-urls.js'
import { ownString } from '../json/own-string.js'
import { pageDigest, type SyncedPage } from '../tree/build-snapshot.js'
import { passFieldsParam, type ListingExtras } from './listing-fields.js'
import { mapBounded } from './map-bounded.js'
import { SLICE, type Pause } from '../tree/slices.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { ListedPage } from './plan-refresh.js'
import { ListingWindowReader } from './read-listing-window.js'
import { readTapeDetail } from './read-page-fields.js'
import { badStatusError, isJson, type UpstreamAnswer, type UpstreamGet } from './upstream-port.js'

export interface FetchProgress {
  readonly phase: 'listing' | 'details'
  readonly done: number
  readonly total: number
}

export interface FetchTreeOptions {
  readonly get: UpstreamGet
  /** The pages endpoint on the CMS, e.g. `/api/v1/cms/pages/`. */
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  /** The CMS's largest page size; `null` when it has no maximum (one request). */
  readonly pageSize: number | null
  readonly concurrency: number
  readonly signal: AbortSignal
  readonly onProgress?: (progress: FetchProgress) => void
  /** Gives the event loop back between slices of a long pass over every page (`slices.ts`); none: no breaks. */
  readonly pause?: Pause
}

/** With no maximum, one request with a limit no tree reaches returns everything. */
const UNLIMITED = 1_000_000_000

function inconsistent(message: string, details?: Record<string, unknown>): never {
  throw createError('SYNC_INCONSISTENT', message, details ? { details } : {})
}

/** The bytes of a CMS answer the sync reads as JSON; refused when it is not a JSON 200. */
function jsonBytes(answer: UpstreamAnswer, where: string): Buffer {
  if (answer.status !== 200) {
    throw badStatusError(answer, `${where}: the CMS answered ${answer.status}`)
  }
  if (!isJson(answer)) throw createError('UPSTREAM_BAD_RESPONSE', `${where}: content type ${answer.contentType || '(none)'}`)
  return answer.bytes ?? Buffer.from(answer.text, 'utf8')
}

export interface ListingOptions {
  /** Already encoded and ending in `&`, e.g. `type=cms.RedirectPage&`. */
  readonly filter?: string
  /** Ask for the extra meta fields and cut them out of the items again (`listing-fields.ts`). */
  readonly withFields?: ListingExtras | undefined
  /** Read the items without `html_url` (`fields=-html_url`): the sync derives it (`derive-urls.ts`). */
  readonly withoutUrl?: boolean
  /**
   * The windows of the last listing pass whose pages the previous snapshot holds: a window whose
   * raw text is byte for byte the same is taken from here instead of being parsed again.
   */
  readonly reuse?: ListingWindows
}

/** One window of the listing (`offset`, `limit`) as a pass read it. */
export interface ListingWindow {
  /** A digest of the CMS's raw text of the window: equal digests, equal pages. */
  readonly digest: string
  /** The `total_count` the window reported. */
  readonly total: number
  readonly pages: readonly ListedPage[]
  /**
   * Asked for `locale` (`ListingExtras`): the one language code every item of the window shows,
   * or `null` when they differ or one shows none.
   */
  readonly locale?: string | null
}

/** A listing pass's windows, by request path. */
export type ListingWindows = ReadonlyMap<string, ListingWindow>

export interface ListingPass {
  /** Every page, in tree order. */
  readonly pages: ListedPage[]
  readonly windows: Map<string, ListingWindow>
  /** Paths of the windows whose raw text had not changed since the pass in `reuse`: not parsed again. */
  readonly reused: ReadonlySet<string>
}

/**
 * The one language code every page of a pass's windows shows, when the pass asked for `locale`
 * (`ListingExtras`); `undefined` when it did not, when pages differ, or when there are none.
 */
export function localeOfWindows(windows: Iterable<ListingWindow>): string | undefined {
  let found: string | undefined
  for (const window of windows) {
    if (window.pages.length === 0) continue
    if (typeof window.locale !== 'string' || (found !== undefined && window.locale !== found)) return undefined
    found = window.locale
  }
  return found
}

/** Walks the listing in tree order, every page of it, refusing a walk that mixes two moments. */
async function fetchListing(options: FetchTreeOptions, listing: ListingOptions = {}): Promise<ListedPage[]> {
  return (await fetchListingPass(options, listing)).pages
}

interface WindowRead {
  readonly window: ListingWindow
  readonly reused: boolean
}

/**
 * The listing pass behind {@link fetchListing}. The first window tells the total; the others are
 * read `options.concurrency` at a time (a large tree is hundreds of windows, too slow one after
 * the other). Every window must report the same total and be full up to the last one, and
 * no page may appear twice: a pass that mixes two moments of the CMS fails.
 *
 * In an incremental sync most windows are what the last pass read. Their raw text is hashed
 * (cheap) instead of parsed, rewritten and compared item by item (the bulk of a pass's CPU): an
 * unchanged window is taken from `reuse` as it is.
 */
export async function fetchListingPass(options: FetchTreeOptions, listing: ListingOptions = {}): Promise<ListingPass> {
  const reader = new ListingWindowReader(options.rewriteUrl, listing.withFields)
  const limit = options.pageSize ?? UNLIMITED
  const extras = listing.withFields
  const query = `${listing.filter ?? ''}${passFieldsParam(extras, listing.withoutUrl === true)}`
  const pathAt = (offset: number) => `${options.pagesPath}?${query}offset=${offset}&limit=${limit}`
  const readWindow = async (offset: number): Promise<WindowRead> => {
    const path = pathAt(offset)
    const answer = await options.get(path, options.signal)
    const digest = answer.status === 200 && isJson(answer) ? createHash('sha256').update(answer.bytes ?? answer.text).digest('base64url') : ''
    const known = listing.reuse?.get(path)
    if (known !== undefined && known.digest === digest) {
      // Same bytes as last time: the same total_count and pages.
      return { window: known, reused: true }
    }
    const { total, pages, locale } = reader.read(jsonBytes(answer, path), path)
    return { window: { digest, total, pages, ...(locale === undefined ? {} : { locale }) }, reused: false }
  }

  const first = await readWindow(0)
  const total = first.window.total
  const step = first.window.pages.length
  if (step === 0 && total > 0) inconsistent(`the listing ended after 0 of ${total} pages`, { path: pathAt(0) })
  const offsets: number[] = []
  for (let offset = step; step > 0 && offset < total; offset += step) offsets.push(offset)
  let done = step
  options.onProgress?.({ phase: 'listing', done: Math.min(done, total), total })
  const rest = await mapBounded(offsets, options.concurrency, options.signal, readWindow, () => {
    done += step
    options.onProgress?.({ phase: 'listing', done: Math.min(done, total), total })
  })

  const pages: ListedPage[] = []
  const windows = new Map<string, ListingWindow>()
  const seen = new Set<number>()
  const reused = new Set<string>()
  let sincePause = 0
  for (const [index, read] of [first, ...rest].entries()) {
    if (options.pause && sincePause >= SLICE) {
      sincePause = 0
      await options.pause()
    }
    sincePause += read.window.pages.length
    const path = pathAt(index === 0 ? 0 : offsets[index - 1]!)
    if (read.window.total !== total) inconsistent(`total_count changed from ${total} to ${read.window.total} while paging`, { path })
    const expected = Math.min(step, total - pages.length)
    if (read.window.pages.length < expected) inconsistent(`the listing ended after ${pages.length + read.window.pages.length} of ${total} pages`, { path })
    if (read.window.pages.length > expected) inconsistent(`the listing holds more pages (${pages.length + read.window.pages.length}) than total_count (${total})`, { path })
    for (const page of read.window.pages) {
      if (seen.has(page.id)) inconsistent(`page ${page.id} is listed twice`, { path })
      seen.add(page.id)
      pages.push(page)
    }
    windows.set(path, read.window)
    if (read.reused) reused.add(path)
  }
  if (total === 0 && first.window.pages.length > 0) {
    inconsistent(`the listing holds more pages (${first.window.pages.length}) than total_count (0)`, { path: pathAt(0) })
  }
  return { pages, windows, reused }
}

/**
 * Pages whose records in the snapshot being kept were made from this pass's own listed pages (their
 * details were fetched in this sync, and `fetchDetail` reuses the listed page's strings).
 */
export interface BuiltFromPass {
  has(id: number): boolean
}

/**
 * A pass's windows to keep for the next one, their pages pointing at the strings `snapshot` keeps
 * for them (the same texts), so that keeping them pins no response body and copies nothing.
 * Windows in `pass.reused` already do. A window with a page `snapshot` does not hold as listed
 * (never, after a successful sync) is dropped: the next pass parses it again. `pause` gives the
 * event loop back between windows. A page in `built` is kept as it is: after a full sync that is
 * every page, and no second object per page is made just as the sync ends.
 */
export async function windowsToKeep(
  pass: ListingPass, snapshot: Snapshot, pause: () => Promise<void>, built?: BuiltFromPass,
): Promise<Map<string, ListingWindow>> {
  const kept = new Map<string, ListingWindow>()
  for (const [path, window] of pass.windows) {
    if (pass.reused.has(path)) {
      kept.set(path, window)
      continue
    }
    // One window's pages at a time: after a full sync this walks every page.
    await pause()
    const pages: ListedPage[] = []
    for (const page of window.pages) {
      const record = snapshot.byId.get(page.id)
      const flags = page.flags
      if (
        record === undefined || record.listItem !== page.listItem ||
        (flags !== undefined && (flags.showInMenus !== record.showInMenus || flags.seoTitle !== record.seoTitle || flags.searchDescription !== record.searchDescription))
      ) break
      // The record took this very page's strings: keeping the page keeps nothing twice.
      if (built?.has(page.id)) {
        pages.push(page)
        continue
      }
      pages.push({
        ...page,
        listItem: record.listItem,
        title: record.title,
        slug: record.slug,
        type: record.type,
        // Flag strings read out of the window's body would pin all of it.
        ...(page.flags ? { flags: { showInMenus: record.showInMenus, seoTitle: record.seoTitle, searchDescription: record.searchDescription } } : {}),
      })
    }
    if (pages.length === window.pages.length) kept.set(path, { ...window, pages })
  }
  return kept
}

export interface FetchedPage {
  readonly page: SyncedPage
  /** A type whose specific model shows another `html_url` than the generic listing does. */
  readonly urlDiffers: boolean
  /** The detail's own `html_url`. */
  readonly htmlUrl: string | null
}

/** The body of a CMS answer the sync reads as JSON, parsed onto `tape`; refused when it is not JSON. */
function parseJsonBytes(answer: UpstreamAnswer, tape: JsonTape, where: string): Buffer {
  const bytes = jsonBytes(answer, where)
  try {
    tape.parse(bytes)
  } catch (error) {
    throw createError('UPSTREAM_BAD_RESPONSE', `${where}: malformed JSON`, { cause: error })
  }
  return bytes
}

/**
 * `tape` is shared by every detail of one `fetchDetails`: it is parsed and read with no wait in
 * between, so no other detail can parse onto it meanwhile.
 */
async function fetchDetail(options: FetchTreeOptions, listed: ListedPage, take: (length: number) => Buffer, tape: JsonTape): Promise<FetchedPage> {
  const path = `${options.pagesPath}${listed.id}/`
  const answer = await options.get(path, options.signal)
  if (answer.status === 404) inconsistent(`page ${listed.id} disappeared during the sync`, { path })
  const bytes = parseJsonBytes(answer, tape, path)
  const detail = readTapeDetail(tape, path)
  const flags = listed.flags
  if (
    detail.id !== listed.id || detail.type !== listed.type || detail.slug !== listed.slug || detail.title !== listed.title ||
    (flags !== undefined &&
      (flags.showInMenus !== detail.showInMenus || flags.seoTitle !== detail.seoTitle || flags.searchDescription !== detail.searchDescription))
  ) {
    inconsistent(`page ${listed.id} changed between its listing and its detail`, { path })
  }
  // Everything kept is made to own its bytes here, while the sync still spreads its work over the
  // CMS's answers: building the snapshot afterwards then copies and hashes only what is new. The
  // fields equal to the listing's (checked above) are the listing's strings, which own theirs.
  // The body is written straight from the CMS's bytes with its `detail_url`s rewritten.
  const edits = findTapeDetailUrlEdits(tape, options.rewriteUrl)
  const detailBytes = take(editedLength(0, bytes.length, edits))
  writeEdited(bytes, 0, bytes.length, edits, detailBytes)
  const page: SyncedPage = {
    id: detail.id,
    type: listed.type,
    title: listed.title,
    slug: listed.slug,
    showInMenus: detail.showInMenus,
    seoTitle: flags?.seoTitle ?? ownString(detail.seoTitle),
    searchDescription: flags?.searchDescription ?? ownString(detail.searchDescription),
    parentId: detail.parentId,
    listItem: listed.listItem,
    detail: detailBytes,
    digest: pageDigest(listed.listItem, undefined, detailBytes),
  }
  return { page, urlDiffers: detail.htmlUrl !== listed.htmlUrl, htmlUrl: detail.htmlUrl }
}

/** Fetches the details of `pages`, `options.concurrency` at a time; the first failure fails all. */
export async function fetchDetails(options: FetchTreeOptions, pages: readonly ListedPage[]): Promise<FetchedPage[]> {
  const total = pages.length
  // A full sync's details packed into slabs, a few pages' one by one (`byte-slabs.ts`).
  const take = bytesTaker(total)
  const tape = new JsonTape()
  try {
    return await mapBounded(pages, options.concurrency, options.signal, (page) => fetchDetail(options, page, take, tape), (done) =>
      options.onProgress?.({ phase: 'details', done, total }),
    )
  } catch (error) {
    if (options.signal.aborted && !isProxyError(error, 'SYNC_ABORTED')) {
      throw createError('SYNC_ABORTED', 'the sync was cancelled', { cause: error })
    }
    throw error
  }
}

/**
 * A listing filtered to one type serialises the specific model (docs/wagtail-compatibility.md#response-bodies), and a
 * model may override its URL (a RedirectPage shows its external address). Reads the listing of
 * `type` and returns its items by page id, checked to hold exactly `expected` in the same order.
 */
export async function fetchTypedItems(options: FetchTreeOptions, type: string, expected: readonly number[]): Promise<Map<number, string>> {
  const listed = await fetchListing(options, { filter: `type=${encodeURIComponent(type)}&` })
  const ids = listed.map((item) => item.id)
  if (ids.length !== expected.length || ids.some((id, i) => id !== expected[i])) {
    inconsistent(`the listing of type ${type} does not hold the same pages as the whole listing`, { type })
  }
  return new Map(listed.map((item) => [item.id, item.listItem]))
}

/** The page with its typed listing item, kept only where it differs from the generic one. */
export function withTypedItem(page: SyncedPage, typed: string | undefined): SyncedPage {
  const wanted = typed === undefined || typed === page.listItem ? undefined : typed
  if (wanted === page.typedListItem) return page
  // A carried-over digest no longer describes the page.
  const { typedListItem: _old, digest: _stale, ...rest } = page
  return wanted === undefined ? rest : { ...rest, typedListItem: wanted }
}
