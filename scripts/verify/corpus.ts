/**
 * The requests to send, built from what discovery found and a seed. Pure and deterministic: the
 * same site and seed give the same corpus. A fixed coverage pass comes first (every documented
 * parameter, view, method and Accept variant once; each discovered locale and translation_of; each
 * other endpoint's views and errors), then seeded random requests: one parameter, combinations of
 * 1–4, a page type with its own fields, details, find, malformed input, and (with `--endpoints`)
 * images/documents listings, details and find drawn from their own ids, titles and tags.
 * @module
 */
import { fieldsOrderCoverage } from './fields-order-corpus.js'
import { seededRandom, type Random } from './prng.js'
import { enc, listingOf, pair } from './query-text.js'
import type { ApiPaths, Method, RequestDraft, SiteEndpoint, SiteModel, SitePage, View, VerifyRequest } from './types.js'

/** cms-shield's default API_PATH: where the seed's CMS mounts its API router. */
export const DEFAULT_API_PATH = '/api/v1/cms/'
/** The pages endpoint at the default mount. */
export const API_PATH = '/api/v1/cms/pages/'

/** The router at `api` (`/api/v2/`, a trailing `/` added when missing) with its pages endpoint `pagesEndpoint` below it. */
export function apiPaths(api = DEFAULT_API_PATH, pagesEndpoint = 'pages'): ApiPaths {
  const root = api.endsWith('/') ? api : `${api}/`
  if (!root.startsWith('/')) throw new Error(`an API path starts with '/': ${api}`)
  return { api: root, pages: `${root}${pagesEndpoint}/` }
}

export const DEFAULT_PATHS: ApiPaths = apiPaths()

export { enc }

export const ACCEPTS: readonly (string | undefined)[] = [
  undefined, 'application/json', '*/*', 'text/html', 'application/xml', 'application/json; indent=2', 'text/html, application/json;q=0.9',
]

const BAD_INTS = ['abc', '-1', '1.5', '', ' 3 ', '+2', '٣', '1_0', '99999999999999999999', '9223372036854775808']
const DEFAULT_FIELDS = ['title', 'type', 'detail_url', 'html_url', 'slug', 'first_published_at']
const META_FIELDS = ['show_in_menus', 'seo_title', 'search_description', 'locale', 'alias_of']
/** Raw (already encoded) oddities: broken escapes, NUL, bytes that are not UTF-8, `+`. */
const ODD = ['%zz', '%', '%00', '%ff%fe', '+', '%C3', 'a%00b', '%E2%80%A8']
/** Already encoded: a raw byte above 0x7F is no HTTP request line at all. */
const JUNK_KEYS = ['foo', 'LIMIT', '%C3%BC', 'a%00', 'html_path', 'sort', 'page']

export const LISTING_KEYS = ['limit', 'offset', 'fields', 'order', 'search', 'search_operator', 'type', 'child_of',
  'descendant_of', 'ancestor_of', 'id', 'title', 'slug', 'show_in_menus', 'seo_title', 'search_description',
  'first_published_at', 'locale', 'translation_of', 'site', 'format', '_'] as const

interface Ctx {
  readonly site: SiteModel
  readonly r: Random
  readonly paths: ApiPaths
}

function page(ctx: Ctx): SitePage {
  return ctx.r.pick(ctx.site.pages)
}

function absentId(ctx: Ctx): string {
  const max = ctx.site.pages.reduce((m, p) => Math.max(m, p.id), 0)
  return ctx.r.pick([String(max + ctx.r.int(1, 1000)), '999999999'])
}

function pageRef(ctx: Ctx, withRoot: boolean): string {
  const roll = ctx.r.next()
  if (roll < 0.6) return String(page(ctx).id)
  if (roll < 0.75 && withRoot) return 'root'
  if (roll < 0.85) return absentId(ctx)
  return ctx.r.pick(BAD_INTS)
}

function typeNames(ctx: Ctx): string[] {
  return ctx.site.types.map((t) => t.name)
}

/** A value for one parameter, unencoded. */
export function valueFor(key: string, ctx: Ctx): string {
  const { r, site } = ctx
  const p = page(ctx)
  const max = site.limitMax ?? 1000
  switch (key) {
    case 'limit':
      return r.pick(['0', '1', '5', '20', String(max), String(max + 1), ...BAD_INTS])
    case 'offset':
      return r.pick(['0', '1', String(Math.max(0, site.totalCount - 1)), String(site.totalCount), String(site.totalCount + 10), ...BAD_INTS])
    case 'fields':
      return r.pick(['*', '_', '_,id', '_,title', '*,-title', ',', 'id,', 'foo', '-foo', 'title(a)', 'parent', 'title,-title',
        r.pick(DEFAULT_FIELDS), `-${r.pick(DEFAULT_FIELDS)}`, r.pick(META_FIELDS), `${r.pick(META_FIELDS)},-${r.pick(DEFAULT_FIELDS)}`])
    case 'order':
      return r.pick(['title', '-title', 'id', '-id', 'slug', '-slug', 'first_published_at', '-first_published_at', 'random', '-random',
        'foo', '', 'title,id', 'live'])
    case 'search':
      return r.pick([...(p.title.split(/\s+/).filter((w) => w.length > 2).slice(0, 2)), p.title, 'zzqx-nomatch', '', 'ü ☃'])
    case 'search_operator':
      return r.pick(['and', 'or', 'xor', ''])
    case 'type': {
      const names = typeNames(ctx)
      return r.pick([r.pick(names), r.pick(names), `${r.pick(names)},${r.pick(names)}`, r.pick(names).toLowerCase(), 'cms.Nope', 'nope', '', 'wagtailcore.Page'])
    }
    case 'child_of':
    case 'descendant_of':
    case 'ancestor_of':
      return pageRef(ctx, true)
    case 'id':
    case 'translation_of':
      return pageRef(ctx, false)
    case 'title':
      return r.pick([p.title, p.title.toLowerCase(), 'nomatch'])
    case 'slug':
      return r.pick([p.slug, 'nope'])
    case 'show_in_menus':
      return r.pick(['true', 'false', 'True', '1', 'abc', ''])
    case 'seo_title':
      return r.pick([p.seoTitle ?? '', 'x'])
    case 'search_description':
      return r.pick([p.searchDescription ?? '', 'x'])
    case 'first_published_at':
      return r.pick([p.firstPublishedAt ?? '', (p.firstPublishedAt ?? '2024-01-01').slice(0, 10), 'abc', '2024-13-01'])
    case 'locale':
      return r.pick([...site.locales, 'xx', ''])
    case 'site':
      return r.pick([...site.hosts, 'nope.example', 'x:abc', ''])
    case 'format':
      return r.pick(['json', 'json', 'api', 'xml', ''])
    case '_':
      return r.pick(['1', ''])
    case 'html_path':
      return htmlPath(ctx)
    default:
      return r.pick(['1', 'abc', ''])
  }
}

function htmlPath(ctx: Ctx): string {
  const paths = ctx.site.pages.map((p) => p.htmlPath).filter((p): p is string => p !== null)
  const known = paths.length > 0 ? ctx.r.pick(paths) : '/'
  return ctx.r.pick([known, known, known.replace(/^\/|\/$/g, ''), `${known}nope/`, '/nope/', '', '//'])
}


/** `type=T` with what only T's serializer knows: its fields, ordering and filters. */
function typed(ctx: Ctx): string[] {
  const { r } = ctx
  const type = r.pick(ctx.site.types)
  const query = [pair('type', type.name)]
  const field = type.fields.length > 0 ? r.pick(type.fields) : 'title'
  const roll = r.next()
  if (roll < 0.3) query.push(pair('fields', r.pick(['*', field, `-${field}`, `${field},-title`, `*,-${field}`])))
  else if (roll < 0.5) query.push(pair('order', r.pick([field, `-${field}`])))
  else if (roll < 0.75 && type.filters.length > 0) {
    const [name, value] = r.pick(type.filters)
    query.push(pair(name, r.pick([value, value, 'zz-nomatch'])))
  } else if (roll < 0.85 && type.nested.length > 0) {
    const [name, keys] = r.pick(type.nested)
    query.push(pair('fields', keys.length > 0 ? `${name}(${r.pick(keys)})` : `${name}(*)`))
  } else query.push(pair('fields', `${field}(x)`))
  if (r.chance(0.3)) query.push(pair('limit', r.pick(['1', '3'])))
  return query
}

function randomParams(ctx: Ctx, keys: readonly string[], count: number): string[] {
  const query: string[] = []
  for (let i = 0; i < count; i++) {
    const key = ctx.r.pick(keys)
    query.push(pair(key, valueFor(key, ctx)))
  }
  return query
}

/** Malformed input: unknown keys, repeated keys, broken escapes, NUL, huge numbers, non-ASCII, very long values. */
function malformed(ctx: Ctx): string[] {
  const { r } = ctx
  const key = r.pick(LISTING_KEYS)
  switch (r.int(0, 6)) {
    case 0:
      return [`${r.pick(JUNK_KEYS)}=${enc(r.pick(['1', 'x', '']))}`]
    case 1:
      return [pair(key, valueFor(key, ctx)), pair(key, valueFor(key, ctx))]
    case 2:
      return [`${enc(key)}=${r.pick(ODD)}`]
    case 3:
      return [pair(r.pick(['limit', 'offset', 'id', 'child_of']), r.pick(['99999999999999999999999999', '1e3', '0x10', '-0']))]
    case 4:
      return [pair(r.pick(['title', 'slug', 'search', 'type']), r.pick(['Über', 'ß', '日本', '\u2028', 'é'.repeat(50)]))]
    case 5:
      return [pair(r.pick(['title', 'search']), 'x'.repeat(r.pick([500, 2000, 4000])))]
    default:
      return [enc(key)]
  }
}

function detailPath(ctx: Ctx): string {
  const { r } = ctx
  const id = page(ctx).id
  const choice = r.pick([String(id), String(id), String(id), `000${id}`, absentId(ctx), '0', '99999999999999999999'])
  return `${ctx.paths.pages}${choice}/`
}

function findQuery(ctx: Ctx): string[] {
  const { r } = ctx
  const query: string[] = []
  if (r.chance(0.85)) query.push(pair('html_path', htmlPath(ctx)))
  if (r.chance(0.3) || query.length === 0) query.push(pair('id', r.pick([String(page(ctx).id), absentId(ctx), 'abc', ''])))
  if (r.chance(0.2)) query.push(...randomParams(ctx, ['type', 'site', 'fields', 'format', 'foo'], 1))
  return query
}

type Draft = RequestDraft

/** What the images and documents endpoints take (Wagtail's BaseAPIViewSet), and what they refuse. */
export const ENDPOINT_KEYS = ['limit', 'offset', 'fields', 'order', 'search', 'search_operator', 'tags', 'title', 'format', '_'] as const
/** Parameters of the pages endpoint only, and junk: `400 query parameter is not an operation or a recognised field`. */
const ENDPOINT_UNKNOWN = ['foo', 'type', 'site', 'locale', 'child_of', 'html_path', 'id']

function absentMediaId(ctx: Ctx, endpoint: SiteEndpoint): string {
  const max = endpoint.ids.reduce((m, id) => Math.max(m, id), 0)
  return ctx.r.pick([String(max + ctx.r.int(1, 1000)), '999999999'])
}

function mediaId(ctx: Ctx, endpoint: SiteEndpoint): string {
  return endpoint.ids.length > 0 ? String(ctx.r.pick(endpoint.ids)) : absentMediaId(ctx, endpoint)
}

/** A value for one parameter of an images/documents listing, unencoded: drawn from its own ids, titles and tags. */
export function endpointValueFor(key: string, endpoint: SiteEndpoint, ctx: Ctx): string {
  const { r } = ctx
  const max = ctx.site.limitMax ?? 1000
  const title = endpoint.titles.length > 0 ? r.pick(endpoint.titles) : 'nomatch'
  const tag = endpoint.tags.length > 0 ? r.pick(endpoint.tags) : 'nomatch'
  switch (key) {
    case 'limit':
      return r.pick(['0', '1', '2', String(max), String(max + 1), 'abc', '-1', ''])
    case 'offset':
      return r.pick(['0', '1', String(Math.max(0, endpoint.totalCount - 1)), String(endpoint.totalCount + 5), 'abc', '-1'])
    case 'fields':
      return r.pick(['*', '_', '_,title', 'title', '-title', 'tags', '-tags', 'download_url', '-download_url', 'width,height', 'foo', '-foo',
        'title(x)', '*,-title', 'detail_url', 'id'])
    case 'order':
      return r.pick(['title', '-title', 'id', '-id', 'random', 'foo', '-created_at', 'title,id', ''])
    case 'search':
      return r.pick([...title.split(/\s+/).filter((w) => w.length > 2).slice(0, 2), title, tag, 'zzqx-nomatch', ''])
    case 'search_operator':
      return r.pick(['and', 'or', 'xor'])
    case 'tags': {
      const other = endpoint.tags.length > 0 ? r.pick(endpoint.tags) : 'nomatch'
      return r.pick([tag, tag, `${tag},${other}`, tag.toUpperCase(), 'nomatch', ''])
    }
    case 'title':
      return r.pick([title, title.toLowerCase(), 'nomatch'])
    case 'format':
      return r.pick(['json', 'api', 'xml'])
    case '_':
      return '1'
    default:
      return r.pick(['1', 'abc', ''])
  }
}

function endpointParams(ctx: Ctx, endpoint: SiteEndpoint, count: number): string[] {
  const query: string[] = []
  for (let i = 0; i < count; i++) {
    const key = ctx.r.pick(ENDPOINT_KEYS)
    query.push(pair(key, endpointValueFor(key, endpoint, ctx)))
  }
  return query
}

/** One request to an images/documents endpoint: listings (one parameter, combinations, errors), details, find. */
function endpointDraft(ctx: Ctx, endpoint: SiteEndpoint): Draft {
  const { r } = ctx
  const path = `${ctx.paths.api}${endpoint.name}/`
  const base = { endpoint: endpoint.name }
  const roll = r.next()
  if (roll < 0.3) return { ...base, view: 'listing', target: listingOf(path, endpointParams(ctx, endpoint, 1)), kind: `${endpoint.name} one parameter` }
  if (roll < 0.5) return { ...base, view: 'listing', target: listingOf(path, endpointParams(ctx, endpoint, r.int(2, 3))), kind: `${endpoint.name} combination` }
  if (roll < 0.58) {
    const query = [pair(r.pick(ENDPOINT_UNKNOWN), r.pick(['1', 'x', ''])), ...endpointParams(ctx, endpoint, r.int(0, 1))]
    return { ...base, view: 'listing', target: listingOf(path, query), kind: `${endpoint.name} unknown parameter` }
  }
  if (roll < 0.8) {
    const id = r.pick([mediaId(ctx, endpoint), mediaId(ctx, endpoint), mediaId(ctx, endpoint), `00${mediaId(ctx, endpoint)}`, absentMediaId(ctx, endpoint), '0'])
    const query = r.chance(0.3) ? [pair(r.pick(['fields', 'fields', 'format', 'foo']), endpointValueFor('fields', endpoint, ctx))] : []
    return { ...base, view: 'detail', target: listingOf(`${path}${id}/`, query), kind: `${endpoint.name} detail` }
  }
  const query: string[] = []
  if (r.chance(0.9)) query.push(pair('id', r.pick([mediaId(ctx, endpoint), mediaId(ctx, endpoint), absentMediaId(ctx, endpoint), 'abc', ''])))
  if (r.chance(0.2)) query.push(pair(r.pick(['fields', 'html_path', 'format']), r.pick(['title', '/', 'json'])))
  return { ...base, view: 'find', target: listingOf(`${path}find/`, query), kind: `${endpoint.name} find` }
}

/** Each endpoint's views and errors once: plain, every parameter, an unknown one, a bad limit, details, find. */
function endpointCoverage(ctx: Ctx, endpoint: SiteEndpoint): Draft[] {
  const path = `${ctx.paths.api}${endpoint.name}/`
  const d = (view: View, target: string, kind: string, method?: Method): Draft => ({ endpoint: endpoint.name, view, target, kind: `${endpoint.name} ${kind}`, ...(method ? { method } : {}) })
  const drafts = [
    d('listing', path, 'plain'),
    ...ENDPOINT_KEYS.map((key) => d('listing', listingOf(path, [pair(key, endpointValueFor(key, endpoint, ctx))]), `param ${key}`)),
    d('listing', listingOf(path, [pair('order', 'title')]), 'order'),
    d('listing', listingOf(path, [pair('order', '-id')]), 'order'),
    d('listing', listingOf(path, [pair('limit', '2'), pair('offset', '1')]), 'page'),
    d('listing', listingOf(path, [pair('foo', 'bar')]), 'unknown parameter'),
    d('listing', listingOf(path, [pair('limit', String((ctx.site.limitMax ?? 1000) + 1))]), 'limit too high'),
    d('listing', listingOf(path, [pair('limit', 'abc')]), 'bad limit'),
    d('detail', `${path}${mediaId(ctx, endpoint)}/`, 'detail'),
    d('detail', `${path}${absentMediaId(ctx, endpoint)}/`, 'detail absent'),
    d('find', listingOf(`${path}find/`, [pair('id', mediaId(ctx, endpoint))]), 'find id'),
    d('find', listingOf(`${path}find/`, [pair('id', absentMediaId(ctx, endpoint))]), 'find absent'),
    d('listing', listingOf(path, [pair('limit', '1')]), 'head', 'HEAD'),
    d('detail', `${path}${mediaId(ctx, endpoint)}/`, 'options', 'OPTIONS'),
  ]
  if (endpoint.tags.length > 0) drafts.push(d('listing', listingOf(path, [pair('tags', ctx.r.pick(endpoint.tags))]), 'tags'))
  return drafts
}

/** With translations (`meta.locale` on the pages): each locale, and translation_of a page of each. */
function localeCoverage(ctx: Ctx): Draft[] {
  const localized = ctx.site.pages.filter((p) => p.locale !== undefined)
  if (localized.length === 0) return []
  const drafts: Draft[] = []
  const locales = [...new Set(localized.map((p) => p.locale as string))]
  for (const locale of locales) {
    drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('locale', locale)]), kind: 'locale' })
    const ofLocale = localized.filter((p) => p.locale === locale)
    const one = ctx.r.pick(ofLocale)
    drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('translation_of', String(one.id))]), kind: 'translation_of' })
    const other = locales.find((l) => l !== locale) ?? locale
    drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('translation_of', String(ctx.r.pick(ofLocale).id)), pair('locale', other)]), kind: 'translation_of' })
    drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('locale', locale), pair('type', one.type), pair('fields', 'locale')]), kind: 'locale' })
  }
  drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('translation_of', 'root')]), kind: 'translation_of' })
  return drafts
}

/** One request per parameter, view, method and Accept variant: what a short run must still cover. */
function coverage(ctx: Ctx): Draft[] {
  const drafts: Draft[] = LISTING_KEYS.map((key) => ({ view: 'listing' as View, target: listingOf(ctx.paths.pages, [pair(key, valueFor(key, ctx))]), kind: `param ${key}` }))
  drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, []), kind: 'plain' })
  drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, typed(ctx)), kind: 'typed' })
  drafts.push({ view: 'detail', target: `${ctx.paths.pages}${page(ctx).id}/`, kind: 'detail' })
  drafts.push({ view: 'detail', target: `${ctx.paths.pages}${absentId(ctx)}/`, kind: 'detail absent' })
  drafts.push({ view: 'find', target: `${ctx.paths.pages}find/?${pair('html_path', htmlPath(ctx))}`, kind: 'find' })
  drafts.push({ view: 'find', target: `${ctx.paths.pages}find/?${pair('id', String(page(ctx).id))}`, kind: 'find id' })
  for (const accept of ACCEPTS.slice(1)) drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('limit', '1')]), accept, kind: 'accept' })
  drafts.push({ view: 'listing', target: listingOf(ctx.paths.pages, [pair('limit', '1')]), method: 'HEAD', kind: 'head' })
  drafts.push({ view: 'detail', target: `${ctx.paths.pages}${page(ctx).id}/`, method: 'OPTIONS', kind: 'options' })
  drafts.push(...localeCoverage(ctx))
  for (const endpoint of ctx.site.media ?? []) drafts.push(...endpointCoverage(ctx, endpoint))
  return drafts
}

function randomDraft(ctx: Ctx): Draft {
  const { r } = ctx
  // The other endpoints get a share in proportion to their number; without any, no draw (the pages corpus stays the seed's).
  const media = ctx.site.media ?? []
  if (media.length > 0 && r.chance(Math.min(0.4, 0.15 * media.length))) return endpointDraft(ctx, r.pick(media))
  const roll = r.next()
  if (roll < 0.3) return { view: 'listing', target: listingOf(ctx.paths.pages, randomParams(ctx, LISTING_KEYS, 1)), kind: 'one parameter' }
  if (roll < 0.5) return { view: 'listing', target: listingOf(ctx.paths.pages, randomParams(ctx, LISTING_KEYS, r.int(2, 4))), kind: 'combination' }
  if (roll < 0.62) return { view: 'listing', target: listingOf(ctx.paths.pages, typed(ctx)), kind: 'typed' }
  if (roll < 0.77) {
    // Mostly what a detail takes; sometimes a listing's parameter, which the detail view must refuse as Wagtail does.
    const keys = r.chance(0.6) ? ['fields', 'format', '_', 'type', 'foo'] : LISTING_KEYS
    const query = randomParams(ctx, keys, r.int(0, 2))
    return { view: 'detail', target: query.length === 0 ? detailPath(ctx) : `${detailPath(ctx)}?${query.join('&')}`, kind: 'detail' }
  }
  if (roll < 0.88) return { view: 'find', target: `${ctx.paths.pages}find/?${findQuery(ctx).join('&')}`, kind: 'find' }
  return { view: 'listing', target: listingOf(ctx.paths.pages, malformed(ctx)), kind: 'malformed' }
}

/** `count` requests for `site` on the API at `paths`, the same for the same seed. */
export function buildCorpus(site: SiteModel, seed: number, count: number, paths: ApiPaths = DEFAULT_PATHS): VerifyRequest[] {
  if (site.pages.length === 0 || site.types.length === 0) throw new Error('the CMS lists no pages: nothing to verify')
  const ctx: Ctx = { site, r: seededRandom(seed), paths }
  // `fields` and `order` in every form next, from a random stream of their own: the rest of a
  // seed's corpus stays what it was.
  const drafts = [...coverage(ctx), ...fieldsOrderCoverage(site, paths, seed)]
  while (drafts.length < count) {
    const draft = randomDraft(ctx)
    const roll = ctx.r.next()
    const method: Method = roll < 0.1 ? 'HEAD' : roll < 0.15 ? 'OPTIONS' : 'GET'
    const accept = ctx.r.chance(0.15) ? ctx.r.pick(ACCEPTS) : undefined
    drafts.push({ ...draft, method, ...(accept === undefined ? {} : { accept }) })
  }
  return drafts.slice(0, count).map((draft, n) => ({ ...draft, n, method: draft.method ?? 'GET' }))
}
