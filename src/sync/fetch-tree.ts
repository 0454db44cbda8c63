/**
 * The reads a sync is made of (`sync-tree.ts` puts them together): the listing in tree order, page
 * by page at the CMS's largest page size; the details of given pages with bounded concurrency; a
 * type's own listing. Everything that would make the result a mix of two moments (a count that drifts while paging, a page listed twice, a page
 * that changed or vanished between its listing and its detail) fails the fetch.
 * @module
 */
import { createError, isProxyError } from '../errors.js'
import { getMember, type JsonNode } from '../json/json-spans.js'
import { rewriteDetailUrlsWithSpans, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import { ownBytes, ownString } from '../json/own-string.js'
import { pageDigest, type SyncedPage } from '../tree/build-snapshot.js'
import { LISTING_FIELDS_PARAM, stripExtraFields } from './listing-fields.js'
import type { ListedPage } from './plan-refresh.js'
import { readDetail, readInteger, readListItem, readListItemWithFlags } from './read-page-fields.js'
import { isJson, type UpstreamAnswer, type UpstreamGet } from './upstream-port.js'

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
}

/** With no maximum, one request with a limit no tree reaches returns everything. */
const UNLIMITED = 1_000_000_000

function inconsistent(message: string, details?: Record<string, unknown>): never {
  throw createError('SYNC_INCONSISTENT', message, details ? { details } : {})
}

function parseJsonBody(answer: UpstreamAnswer, rewriteUrl: RewriteUrl, where: string): { text: string; root: JsonNode } {
  if (answer.status !== 200) {
    throw createError('UPSTREAM_BAD_STATUS', `${where}: the CMS answered ${answer.status}`, { details: { status: answer.status } })
  }
  if (!isJson(answer)) throw createError('UPSTREAM_BAD_RESPONSE', `${where}: content type ${answer.contentType || '(none)'}`)
  try {
    return rewriteDetailUrlsWithSpans(answer.text, rewriteUrl)
  } catch (error) {
    throw createError('UPSTREAM_BAD_RESPONSE', `${where}: malformed JSON`, { cause: error })
  }
}

export interface ListingOptions {
  /** Already encoded and ending in `&`, e.g. `type=cms.RedirectPage&`. */
  readonly filter?: string
  /** Ask for the extra meta fields and cut them out of the items again (`listing-fields.ts`). */
  readonly withFields?: boolean
}

/** Walks the listing in tree order, every page of it, refusing a walk that mixes two moments. */
export async function fetchListing(options: FetchTreeOptions, listing: ListingOptions = {}): Promise<ListedPage[]> {
  const listed: ListedPage[] = []
  const seen = new Set<number>()
  const limit = options.pageSize ?? UNLIMITED
  const query = `${listing.filter ?? ''}${listing.withFields ? LISTING_FIELDS_PARAM : ''}`
  let total: number | undefined
  while (total === undefined || listed.length < total) {
    const path = `${options.pagesPath}?${query}offset=${listed.length}&limit=${limit}`
    const { text, root } = parseJsonBody(await options.get(path, options.signal), options.rewriteUrl, path)
    const count = readInteger(getMember(getMember(root, 'meta'), 'total_count'), 'meta.total_count', path)
    const items = getMember(root, 'items')
    if (items?.kind !== 'array') throw createError('UPSTREAM_BAD_RESPONSE', `${path}: items is not an array`)
    if (total === undefined) total = count
    else if (count !== total) inconsistent(`total_count changed from ${total} to ${count} while paging`, { path })
    if (items.items.length === 0 && listed.length < total) {
      inconsistent(`the listing ended after ${listed.length} of ${total} pages`, { path })
    }
    for (const item of items.items) {
      const fields = listing.withFields ? readListItemWithFlags(item, path) : readListItem(item, path)
      if (seen.has(fields.id)) inconsistent(`page ${fields.id} is listed twice`, { path })
      seen.add(fields.id)
      const listItem = listing.withFields ? stripExtraFields(text, item) : text.slice(item.start, item.end)
      listed.push({ ...fields, listItem })
    }
    if (listed.length > total) inconsistent(`the listing holds more pages (${listed.length}) than total_count (${total})`, { path })
    options.onProgress?.({ phase: 'listing', done: listed.length, total })
  }
  return listed
}

export interface FetchedPage {
  readonly page: SyncedPage
  /** A type whose specific model shows another `html_url` than the generic listing does. */
  readonly urlDiffers: boolean
}

async function fetchDetail(options: FetchTreeOptions, listed: ListedPage): Promise<FetchedPage> {
  const path = `${options.pagesPath}${listed.id}/`
  const answer = await options.get(path, options.signal)
  if (answer.status === 404) inconsistent(`page ${listed.id} disappeared during the sync`, { path })
  const { text, root } = parseJsonBody(answer, options.rewriteUrl, path)
  const detail = readDetail(root, path)
  const flags = listed.flags
  if (
    detail.id !== listed.id || detail.type !== listed.type || detail.slug !== listed.slug || detail.title !== listed.title ||
    (flags !== undefined &&
      (flags.showInMenus !== detail.showInMenus || flags.seoTitle !== detail.seoTitle || flags.searchDescription !== detail.searchDescription))
  ) {
    inconsistent(`page ${listed.id} changed between its listing and its detail`, { path })
  }
  // Everything kept is made to own its bytes here, while the sync still spreads its work over the
  // CMS's answers: building the snapshot afterwards then copies and hashes only what is new.
  const detailBytes = ownBytes(text)
  const listItem = ownString(listed.listItem)
  const page: SyncedPage = {
    id: detail.id,
    type: ownString(detail.type),
    title: ownString(detail.title),
    slug: ownString(detail.slug),
    showInMenus: detail.showInMenus,
    seoTitle: ownString(detail.seoTitle),
    searchDescription: ownString(detail.searchDescription),
    parentId: detail.parentId,
    listItem,
    detail: detailBytes,
    digest: pageDigest(listItem, undefined, detailBytes),
  }
  return { page, urlDiffers: detail.htmlUrl !== listed.htmlUrl }
}

/** Fetches the details of `pages`, `options.concurrency` at a time; the first failure fails all. */
export async function fetchDetails(options: FetchTreeOptions, pages: readonly ListedPage[]): Promise<FetchedPage[]> {
  const total = pages.length
  try {
    return await mapBounded(pages, options.concurrency, options.signal, (page) => fetchDetail(options, page), (done) =>
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
 * A listing filtered to one type serialises the specific model (spec §2 `get_queryset`), and a
 * model may override its URL (a RedirectPage shows its external address). Reads the listing of
 * `type` and returns its items by page id, checked to hold exactly `expected` in the same order.
 */
export async function fetchTypedItems(options: FetchTreeOptions, type: string, expected: readonly number[]): Promise<Map<number, string>> {
  const listed = await fetchListing(options, { filter: `type=${encodeURIComponent(type)}&` })
  const ids = listed.map((item) => item.id)
  if (ids.length !== expected.length || ids.some((id, i) => id !== expected[i])) {
    inconsistent(`the listing of type ${type} does not hold the same pages as the whole listing`, { type })
  }
  return new Map(listed.map((item) => [item.id, ownString(item.listItem)]))
}

/** Runs `work` over `items` with at most `concurrency` in flight; the first failure stops the rest. */
async function mapBounded<T, R>(items: readonly T[], concurrency: number, signal: AbortSignal, work: (item: T) => Promise<R>, onDone: (done: number) => void): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  let done = 0
  let failed = false
  const worker = async () => {
    while (!failed && next < items.length) {
      if (signal.aborted) throw createError('SYNC_ABORTED', 'the sync was cancelled')
      const index = next++
      try {
        results[index] = await work(items[index]!)
      } catch (error) {
        failed = true
        throw error
      }
      onDone(++done)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker))
  return results
}

/** The page with its typed listing item, kept only where it differs from the generic one. */
export function withTypedItem(page: SyncedPage, typed: string | undefined): SyncedPage {
  const wanted = typed === undefined || typed === page.listItem ? undefined : typed
  if (wanted === page.typedListItem) return page
  // A carried-over digest no longer describes the page.
  const { typedListItem: _old, digest: _stale, ...rest } = page
  return wanted === undefined ? rest : { ...rest, typedListItem: wanted }
}
