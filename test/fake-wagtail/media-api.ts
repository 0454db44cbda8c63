/**
 * The router's `images` and `documents` endpoints (Wagtail's `ImagesAPIViewSet` and
 * `DocumentsAPIViewSet`), far simpler than the pages API: cms-shield answers them read-through, so
 * what matters here is their shape (`meta.detail_url` on the API, `download_url` on the media),
 * their 400/404s and that each request is counted. Listings take `limit`, `offset`, `fields`,
 * `order` (`id`, `title`), `search` (a title substring) and `tags`; anything else is Wagtail's 400.
 * @module
 */
import { badRequest, notFound } from './api-errors.js'
import type { Answer, ApiConfig } from './pages-api.js'
import { jsonAnswer } from './pages-api.js'
import { paginate } from './page-query.js'
import { parsePyInt, toSafeNumber } from './python-semantics.js'
import type { QueryDict } from './query-dict.js'
import { HTML_CONTENT_TYPE } from './render.js'
import type { Route } from './routes.js'
import type { FakeMediaItem } from './types.js'

export const MEDIA_ENDPOINTS = ['images', 'documents'] as const

const KNOWN = new Set(['limit', 'offset', 'fields', 'order', 'search', 'search_operator', 'tags', 'format', '_'])
const MODEL = { images: 'wagtailimages.Image', documents: 'wagtaildocs.Document' } as const
const OBJECT_NAME = { images: 'Image', documents: 'Document' } as const

export function mediaOptions(endpoint: string): unknown {
  return { name: endpoint === 'images' ? 'Images Api' : 'Documents Api', description: '', renders: ['application/json', 'text/html'], parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'] }
}

function itemJson(endpoint: 'images' | 'documents', item: FakeMediaItem, config: ApiConfig, detail: boolean): unknown {
  const base = config.urls.detailBase
  const meta = {
    type: MODEL[endpoint],
    detail_url: `${base}${config.urls.apiPath}${endpoint}/${item.id}/`,
    tags: item.tags ?? [],
    // Images are served from MEDIA_URL as stored; documents through Wagtail's own view, on the site's host.
    download_url: endpoint === 'images' ? `/media/${item.file}` : `${config.urls.siteUrl}/documents/${item.id}/${item.file.split('/').pop() ?? ''}`,
  }
  const json: Record<string, unknown> = { id: item.id, meta, title: item.title }
  if (detail && endpoint === 'images') Object.assign(json, { width: item.width ?? 0, height: item.height ?? 0 })
  return json
}

function itemsOf(endpoint: 'images' | 'documents', query: QueryDict, config: ApiConfig): FakeMediaItem[] {
  const unknown = query.keys().filter((key) => !KNOWN.has(key))
  if (unknown.length > 0) throw badRequest(`query parameter is not an operation or a recognised field: ${unknown.join(', ')}`)
  let items = [...(config.media?.[endpoint] ?? [])]
  const tags = query.get('tags')
  if (tags !== undefined) items = items.filter((item) => tags.split(',').every((tag) => (item.tags ?? []).includes(tag)))
  const search = query.get('search')
  if (search !== undefined) items = items.filter((item) => item.title.toLowerCase().includes(search.toLowerCase()))
  const order = query.get('order')
  if (order !== undefined) {
    const field = order.replace(/^-/, '')
    if (field !== 'id' && field !== 'title') throw badRequest(`cannot order by '${field}' (unknown field)`)
    items.sort((a, b) => (field === 'id' ? a.id - b.id : a.title < b.title ? -1 : a.title > b.title ? 1 : 0))
    if (order.startsWith('-')) items.reverse()
  } else {
    items.sort((a, b) => a.id - b.id)
  }
  return items
}

/** A GET or HEAD of one of the two endpoints' views. */
export function mediaAnswer(route: Route, query: QueryDict, config: ApiConfig, indent: number, vary: string): Answer {
  const endpoint = route.endpoint as 'images' | 'documents'
  if (route.view === 'list') {
    const items = itemsOf(endpoint, query, config)
    const { offset, limit } = paginate(query, config.limitMax)
    const page = items.slice(offset, offset + limit).map((item) => itemJson(endpoint, item, config, false))
    return jsonAnswer(200, { meta: { total_count: items.length }, items: page }, indent, vary)
  }
  if (route.view === 'detail') {
    const id = toSafeNumber(BigInt(route.idDigits as string))
    const item = config.media?.[endpoint].find((candidate) => candidate.id === id)
    if (!item) throw notFound(`No ${OBJECT_NAME[endpoint]} matches the given query.`)
    return jsonAnswer(200, itemJson(endpoint, item, config, true), indent, vary)
  }
  const raw = query.get('id')
  const parsed = raw === undefined ? undefined : parsePyInt(raw)
  const id = parsed === undefined ? undefined : toSafeNumber(parsed)
  if (id === undefined || !config.media?.[endpoint].some((item) => item.id === id)) throw notFound('not found')
  const location = `${config.urls.detailBase}${config.urls.apiPath}${endpoint}/${id}/`
  return {
    status: 302,
    headers: [['Content-Type', HTML_CONTENT_TYPE], ['Location', location], ['Vary', vary], ['Allow', 'GET, HEAD, OPTIONS'], ['Content-Length', '0']],
    body: Buffer.alloc(0),
  }
}
