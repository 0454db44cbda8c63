/**
 * Learns from the CMS what the corpus is built from: its largest page size (probed as cms-shield
 * probes it), every page of the listing, the page types present and each type's own fields (one
 * `?type=T&fields=*&limit=1` and one detail per type; for a type with date fields, their value on
 * each of its pages), the base of its `detail_url`s, and (with `--endpoints`) every item of the
 * router's other endpoints: ids, titles, tags.
 * @module
 */
import { DEFAULT_PATHS } from './corpus.js'
import type { ApiPaths, Exchange, SiteDateField, SiteEndpoint, SiteModel, SitePage, SiteType } from './types.js'

export type Get = (target: string) => Promise<Exchange>

export class DiscoveryError extends Error {}

/** offset=limit=10^9 asks for nothing that exists: an empty page when there is no maximum. */
const PROBE = 1_000_000_000
/** The page size used to walk a CMS that has no maximum. */
const UNBOUNDED_PAGE = 500
const LISTING_FIELDS = 'show_in_menus,seo_title,search_description,locale'

type Json = Record<string, unknown>

async function getJson(get: Get, target: string): Promise<{ status: number; json: unknown; text: string }> {
  const exchange = await get(target)
  if (!exchange.ok) throw new DiscoveryError(`GET ${target}: ${exchange.error}`)
  const text = exchange.answer.body.toString('utf8')
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: exchange.answer.status, json, text }
}

async function ok(get: Get, target: string): Promise<Json> {
  const answer = await getJson(get, target)
  if (answer.status !== 200 || typeof answer.json !== 'object' || answer.json === null) {
    throw new DiscoveryError(`GET ${target}: the CMS answered ${answer.status} ${answer.text.slice(0, 200)}`)
  }
  return answer.json as Json
}

export async function probeLimitMax(get: Get, pagesPath = DEFAULT_PATHS.pages): Promise<number | null> {
  const answer = await getJson(get, `${pagesPath}?offset=${PROBE}&limit=${PROBE}`)
  if (answer.status === 200) return null
  const match = /limit cannot be higher than (\d+)/.exec(answer.text)
  if (answer.status === 400 && match) return Number(match[1])
  throw new DiscoveryError(`the CMS answered ${answer.status} when asked for its page size: ${answer.text.slice(0, 200)}`)
}

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

function toPage(item: Json): SitePage | undefined {
  const meta = (item['meta'] ?? {}) as Json
  const id = item['id']
  const type = str(meta['type'])
  if (typeof id !== 'number' || type === undefined) return undefined
  const htmlUrl = str(meta['html_url'])
  let htmlPath: string | null = null
  if (htmlUrl) {
    try {
      htmlPath = decodeURIComponent(new URL(htmlUrl).pathname)
    } catch {
      htmlPath = null
    }
  }
  return {
    id,
    type,
    title: str(item['title']) ?? '',
    slug: str(meta['slug']) ?? '',
    htmlPath,
    firstPublishedAt: str(meta['first_published_at']) ?? null,
    ...(str(meta['seo_title']) === undefined ? {} : { seoTitle: str(meta['seo_title']) }),
    ...(str(meta['search_description']) === undefined ? {} : { searchDescription: str(meta['search_description']) }),
    ...(str(meta['locale']) === undefined ? {} : { locale: str(meta['locale']) }),
  }
}

/** Every listed page, a page of `pageSize` at a time; asks for the extra meta fields when the CMS has them. */
async function walkListing(get: Get, pagesPath: string, pageSize: number): Promise<{ pages: SitePage[]; items: Json[]; totalCount: number }> {
  let fields = `fields=${LISTING_FIELDS}&`
  const first = await getJson(get, `${pagesPath}?${fields}limit=${pageSize}&offset=0`)
  if (first.status !== 200) fields = ''
  const items: Json[] = []
  let totalCount = 0
  for (let offset = 0; ; ) {
    const body = offset === 0 && fields !== '' ? (first.json as Json) : await ok(get, `${pagesPath}?${fields}limit=${pageSize}&offset=${offset}`)
    const batch = Array.isArray(body['items']) ? (body['items'] as Json[]) : []
    totalCount = Number((body['meta'] as Json | undefined)?.['total_count'] ?? 0)
    items.push(...batch)
    offset += batch.length
    if (batch.length === 0 || offset >= totalCount) break
  }
  const pages = items.map(toPage).filter((page): page is SitePage => page !== undefined)
  return { pages, items, totalCount }
}

function isShortScalar(value: unknown): value is string | number | boolean {
  if (typeof value === 'string') return value.length > 0 && value.length <= 80 && !/[\n<]/.test(value)
  return typeof value === 'number' || typeof value === 'boolean'
}

/** A `DateField`'s or an aware `DateTimeField`'s value, as DRF writes them. */
const DATE_VALUE = /^\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d))?$/

/** Each of `fields`' value on every page of the type, from its listing (`fields=_,id,<fields>`), a page of `pageSize` at a time. */
async function dateValues(get: Get, pagesPath: string, name: string, fields: readonly string[], pageSize: number): Promise<SiteDateField[]> {
  const values = fields.map(() => [] as (readonly [number, string | null])[])
  for (let offset = 0; ; ) {
    const body = await ok(get, `${pagesPath}?type=${encodeURIComponent(name)}&fields=_,id,${fields.join(',')}&limit=${pageSize}&offset=${offset}`)
    const batch = Array.isArray(body['items']) ? (body['items'] as Json[]) : []
    for (const item of batch) {
      if (typeof item['id'] !== 'number') continue
      fields.forEach((field, i) => values[i]!.push([item['id'] as number, str(item[field]) ?? null]))
    }
    offset += batch.length
    if (batch.length === 0 || offset >= Number((body['meta'] as Json | undefined)?.['total_count'] ?? 0)) break
  }
  return fields.map((field, i) => ({ name: field, values: values[i]! }))
}

/** A type whose serializer the CMS cannot show (an error on `fields=*`) is still used, without its own fields. */
async function describeType(get: Get, pagesPath: string, name: string, count: number, pageSize: number, log: (line: string) => void): Promise<SiteType> {
  try {
    const type = await describeTypeFields(get, pagesPath, name, count)
    const dated = type.filters.filter(([, value]) => DATE_VALUE.test(value)).map(([field]) => field)
    return dated.length === 0 ? type : { ...type, dates: await dateValues(get, pagesPath, name, dated, pageSize) }
  } catch (error) {
    if (!(error instanceof DiscoveryError)) throw error
    log(`verify: ${name}'s own fields are not used: ${error.message}`)
    return { name, count, fields: [], filters: [], nested: [] }
  }
}

async function describeTypeFields(get: Get, pagesPath: string, name: string, count: number): Promise<SiteType> {
  const listing = await ok(get, `${pagesPath}?type=${encodeURIComponent(name)}&fields=*&limit=1`)
  const item = ((listing['items'] as Json[] | undefined) ?? [])[0]
  if (!item) return { name, count, fields: [], filters: [], nested: [] }
  const fields = [
    ...Object.keys(item).filter((key) => key !== 'id' && key !== 'meta'),
    ...Object.keys((item['meta'] ?? {}) as Json).filter((key) => key !== 'type' && key !== 'detail_url'),
  ]
  const detail = await ok(get, `${pagesPath}${String(item['id'])}/`)
  const own = Object.entries(detail).filter(([key]) => !['id', 'meta', 'title'].includes(key))
  const filters = own.filter(([, value]) => isShortScalar(value)).map(([key, value]) => [key, String(value)] as const)
  const nested = own
    .filter(([, value]) => typeof value === 'object' && value !== null && !Array.isArray(value))
    .map(([key, value]) => [key, Object.keys(value as Json).filter((k) => k !== 'meta')] as const)
  return { name, count, fields, filters, nested }
}

/** `http://cms.example/api/v1/cms/pages/7/` → `http://cms.example`: the base detail_urls share. */
export function detailBase(detailUrl: string, id: number, pagesPath = DEFAULT_PATHS.pages): string | undefined {
  const suffix = `${pagesPath}${id}/`
  return detailUrl.endsWith(suffix) ? detailUrl.slice(0, -suffix.length) : undefined
}

export interface Discovery {
  readonly site: SiteModel
  /** The base of the CMS's own detail_urls (its WAGTAILAPI_BASE_URL or Site root). */
  readonly detailBase: string
  /** CMS requests discovery made. */
  readonly requests: number
}

/** Every item of one of the router's other endpoints (`images/`), a page at a time: its ids, titles and tags. */
async function walkEndpoint(get: Get, paths: ApiPaths, name: string, pageSize: number): Promise<SiteEndpoint> {
  const items: Json[] = []
  let totalCount = 0
  for (let offset = 0; ; ) {
    const body = await ok(get, `${paths.api}${name}/?limit=${pageSize}&offset=${offset}`)
    const batch = Array.isArray(body['items']) ? (body['items'] as Json[]) : []
    totalCount = Number((body['meta'] as Json | undefined)?.['total_count'] ?? 0)
    items.push(...batch)
    offset += batch.length
    if (batch.length === 0 || offset >= totalCount) break
  }
  const ids = items.map((item) => item['id']).filter((id): id is number => typeof id === 'number')
  const titles = items.map((item) => str(item['title'])).filter((title): title is string => title !== undefined && title !== '')
  const tags = new Set<string>()
  for (const item of items) {
    const list = ((item['meta'] ?? {}) as Json)['tags']
    if (Array.isArray(list)) for (const tag of list) if (typeof tag === 'string') tags.add(tag)
  }
  return { name, totalCount, ids, titles, tags: [...tags].sort() }
}

export interface DiscoverOptions {
  /** Where the router is mounted and the pages endpoint below it (default `/api/v1/cms/pages/`). */
  readonly paths?: ApiPaths
  /** The router's other endpoints to learn (`images`, `documents`): each one's listing is walked. */
  readonly endpoints?: readonly string[]
}

export async function discoverSite(get: Get, log: (line: string) => void = () => undefined, options: DiscoverOptions = {}): Promise<Discovery> {
  const paths = options.paths ?? DEFAULT_PATHS
  let requests = 0
  const counted: Get = (target) => {
    requests++
    return get(target)
  }
  const limitMax = await probeLimitMax(counted, paths.pages)
  log(`verify: the CMS's largest page size is ${limitMax ?? 'unbounded'}`)
  const { pages, items, totalCount } = await walkListing(counted, paths.pages, limitMax ?? UNBOUNDED_PAGE)
  if (pages.length === 0) throw new DiscoveryError('the CMS lists no pages')
  const firstMeta = (items[0]?.['meta'] ?? {}) as Json
  const base = detailBase(str(firstMeta['detail_url']) ?? '', pages[0]!.id, paths.pages)
  if (base === undefined) throw new DiscoveryError(`cannot tell the CMS's detail_url base from ${String(firstMeta['detail_url'])}`)
  const counts = new Map<string, number>()
  for (const page of pages) counts.set(page.type, (counts.get(page.type) ?? 0) + 1)
  const types: SiteType[] = []
  for (const [name, count] of counts) types.push(await describeType(counted, paths.pages, name, count, limitMax ?? UNBOUNDED_PAGE, log))
  const hosts = new Set<string>()
  for (const item of items) {
    const url = str(((item['meta'] ?? {}) as Json)['html_url'])
    if (!url) continue
    try {
      const parsed = new URL(url)
      hosts.add(parsed.hostname)
      hosts.add(`${parsed.hostname}:${parsed.port || (parsed.protocol === 'https:' ? '443' : '80')}`)
    } catch {
      // An html_url that is not absolute names no site.
    }
  }
  const locales = [...new Set(pages.map((page) => page.locale).filter((locale): locale is string => locale !== undefined))]
  const media: SiteEndpoint[] = []
  for (const name of options.endpoints ?? []) {
    const endpoint = await walkEndpoint(counted, paths, name, limitMax ?? UNBOUNDED_PAGE)
    log(`verify: ${paths.api}${name}/ lists ${endpoint.ids.length} items with ${endpoint.tags.length} tags`)
    media.push(endpoint)
  }
  log(`verify: discovered ${pages.length} pages of ${types.length} types${locales.length > 0 ? ` in locales ${locales.join(', ')}` : ''} in ${requests} requests`)
  return {
    site: { limitMax, totalCount, pages, types, hosts: [...hosts], locales: locales.length > 0 ? locales : ['en'], ...(media.length > 0 ? { media } : {}) },
    detailBase: base,
    requests: requests,
  }
}
