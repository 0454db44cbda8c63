/**
 * Reads the whole page tree from the CMS: the listing in tree order, page by page at the CMS's
 * largest page size, then every page's detail with bounded concurrency. Everything that would make
 * the result a mix of two moments (a count that drifts while paging, a page listed twice, a page
 * that changed or vanished between its listing and its detail) fails the fetch.
 * @module
 */
import { createError, isProxyError } from '../errors.js'
import { getMember, type JsonNode } from '../json/json-spans.js'
import { rewriteDetailUrlsWithSpans, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { SyncedPage } from '../tree/build-snapshot.js'
import { readDetail, readInteger, readListItem, type ListedFields } from './read-page-fields.js'
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

interface Listed extends ListedFields {
  readonly listItem: string
}

/** Walks the listing in tree order; `filter` (already encoded, e.g. `type=cms.RedirectPage&`) narrows it. */
async function fetchListing(options: FetchTreeOptions, filter = ''): Promise<Listed[]> {
  const listed: Listed[] = []
  const seen = new Set<number>()
  const limit = options.pageSize ?? UNLIMITED
  let total: number | undefined
  while (total === undefined || listed.length < total) {
    const path = `${options.pagesPath}?${filter}offset=${listed.length}&limit=${limit}`
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
      const fields = readListItem(item, path)
      if (seen.has(fields.id)) inconsistent(`page ${fields.id} is listed twice`, { path })
      seen.add(fields.id)
      listed.push({ ...fields, listItem: text.slice(item.start, item.end) })
    }
    if (listed.length > total) inconsistent(`the listing holds more pages (${listed.length}) than total_count (${total})`, { path })
    options.onProgress?.({ phase: 'listing', done: listed.length, total })
  }
  return listed
}

interface Fetched {
  readonly page: SyncedPage
  /** A type whose specific model shows another `html_url` than the generic listing does. */
  readonly urlDiffers: boolean
}

async function fetchDetail(options: FetchTreeOptions, listed: Listed): Promise<Fetched> {
  const path = `${options.pagesPath}${listed.id}/`
  const answer = await options.get(path, options.signal)
  if (answer.status === 404) inconsistent(`page ${listed.id} disappeared during the sync`, { path })
  const { text, root } = parseJsonBody(answer, options.rewriteUrl, path)
  const detail = readDetail(root, path)
  if (detail.id !== listed.id || detail.type !== listed.type || detail.slug !== listed.slug || detail.title !== listed.title) {
    inconsistent(`page ${listed.id} changed between its listing and its detail`, { path })
  }
  const page: SyncedPage = {
    id: detail.id,
    type: detail.type,
    title: detail.title,
    slug: detail.slug,
    showInMenus: detail.showInMenus,
    seoTitle: detail.seoTitle,
    searchDescription: detail.searchDescription,
    parentId: detail.parentId,
    listItem: listed.listItem,
    detail: text,
  }
  return { page, urlDiffers: detail.htmlUrl !== listed.htmlUrl }
}

/**
 * A listing filtered to one type serialises the specific model (spec §2 `get_queryset`), and a
 * model may override its URL (a RedirectPage shows its external address). For each type whose
 * detail `html_url` differs from its generic listing item, read that type's own listing so the
 * index can answer `?type=<it>` with the CMS's own items.
 */
async function addTypedItems(options: FetchTreeOptions, fetched: readonly Fetched[]): Promise<SyncedPage[]> {
  const types = new Set(fetched.filter((f) => f.urlDiffers).map((f) => f.page.type))
  const typedItems = new Map<number, string>()
  for (const type of types) {
    const expected = fetched.filter((f) => f.page.type === type).map((f) => f.page.id)
    const listed = await fetchListing(options, `type=${encodeURIComponent(type)}&`)
    const ids = listed.map((item) => item.id)
    if (ids.length !== expected.length || ids.some((id, i) => id !== expected[i])) {
      inconsistent(`the listing of type ${type} does not hold the same pages as the whole listing`, { type })
    }
    for (const item of listed) typedItems.set(item.id, item.listItem)
  }
  return fetched.map(({ page }) => {
    const typed = typedItems.get(page.id)
    return typed === undefined || typed === page.listItem ? page : { ...page, typedListItem: typed }
  })
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

export async function fetchTree(options: FetchTreeOptions): Promise<SyncedPage[]> {
  const listed = await fetchListing(options)
  const total = listed.length
  try {
    const fetched = await mapBounded(listed, options.concurrency, options.signal, (page) => fetchDetail(options, page), (done) =>
      options.onProgress?.({ phase: 'details', done, total }),
    )
    return await addTypedItems(options, fetched)
  } catch (error) {
    if (options.signal.aborted && !isProxyError(error, 'SYNC_ABORTED')) {
      throw createError('SYNC_ABORTED', 'the sync was cancelled', { cause: error })
    }
    throw error
  }
}
