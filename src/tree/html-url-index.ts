/**
 * Which page a PURGE is about. Wagtail's frontend_cache HTTPBackend sends `PURGE <path+query>`
 * with `Host:` set to the purged URL's host (docs/wagtail-compatibility.md#wire-format), either for a page's own URL (its
 * `html_url`, on publish and unpublish) or, with `WAGTAILAPI_USE_FRONTENDCACHE`, for the API's
 * detail URL `<API_PATH>pages/<id>/` (docs/wagtail-compatibility.md#what-wagtail-purges). This module turns such a request into a
 * {@link PurgeTarget}: a page id when we can tell, the listing when it names another pages API
 * path, one of the router's other endpoints when it names one of theirs, and
 * `unknown` otherwise (the caller still refreshes the listing: a purge always means *something*
 * changed, and moves or new pages only show in the listing).
 *
 * Page URLs are matched against every page's `meta.html_url` from its listing item. The map is
 * built lazily, once per snapshot (snapshots are immutable), and held in a WeakMap so it goes
 * away with the snapshot. Pure: no Fastify, no I/O.
 * @module
 */
import { DEFAULT_MOUNT, type ApiMount } from '../config/api-mount.js'
import { JsonTape } from '../json/json-tape.js'
import type { PageRecord, Snapshot } from './snapshot.js'

export type PurgeTarget =
  | { readonly kind: 'page'; readonly id: number }
  | { readonly kind: 'listing' }
  | { readonly kind: 'endpoint'; readonly endpoint: string }
  | { readonly kind: 'unknown' }

const LISTING: PurgeTarget = Object.freeze({ kind: 'listing' })
const UNKNOWN: PurgeTarget = Object.freeze({ kind: 'unknown' })

/** A key shared by several pages: the purge cannot say which one it meant. */
const AMBIGUOUS = null

interface HtmlUrlIndex {
  /** Normalised `host` + `path` → page id (or {@link AMBIGUOUS}). */
  readonly byHostPath: ReadonlyMap<string, number | null>
  /** Normalised path alone → page id (or {@link AMBIGUOUS}), for a Host that matches no page's. */
  readonly byPath: ReadonlyMap<string, number | null>
}

const indexes = new WeakMap<Snapshot, HtmlUrlIndex>()

/**
 * @param snapshot the current snapshot; `undefined` before the first sync (API detail paths still
 *   resolve to their id, page URLs to `unknown`).
 * @param host the request's `Host` header as sent (hostname, plus `:port` only when the purged URL
 *   had one, docs/wagtail-compatibility.md#wire-format).
 * @param pathAndQuery the request-target: origin-form (`/blog-one/?x=1`) or absolute-form.
 * @param mount where the API's router is (API_PATH and its endpoints).
 */
export function resolvePurgeTarget(snapshot: Snapshot | undefined, host: string | undefined, pathAndQuery: string, mount: ApiMount = DEFAULT_MOUNT): PurgeTarget {
  let rawPath: string
  let rawHost = host
  if (pathAndQuery.startsWith('/')) {
    rawPath = stripQueryAndFragment(pathAndQuery)
  } else if (/^https?:\/\//i.test(pathAndQuery)) {
    // RFC 9112 §3.2.2: with an absolute-form target, its authority replaces the Host header.
    const url = parseUrl(pathAndQuery)
    if (url === undefined) return UNKNOWN
    rawPath = url.pathname
    rawHost = url.host
  } else {
    return UNKNOWN // `*` (asterisk-form) or garbage
  }
  const path = normalisePath(rawPath)

  const { pagesPath } = mount
  if (path.startsWith(pagesPath)) {
    const detail = /^([0-9]+)\/$/.exec(path.slice(pagesPath.length))
    if (detail === null) return LISTING // the listing itself, find/, or a path the API 404s
    const id = pageIdFromDigits(detail[1]!)
    return id === undefined ? UNKNOWN : { kind: 'page', id }
  }
  if (path === pagesPath.slice(0, -1)) return LISTING // the slash-less route (it redirects)
  if (path.startsWith(mount.root)) {
    const name = path.slice(mount.root.length).split('/')[0]!
    if (mount.endpoints.includes(name)) return { kind: 'endpoint', endpoint: name }
  }

  if (snapshot === undefined) return UNKNOWN
  const index = indexOf(snapshot)
  if (rawHost !== undefined) {
    for (const candidate of hostCandidates(rawHost)) {
      if (!index.byHostPath.has(`${candidate}${path}`)) continue
      const id = index.byHostPath.get(`${candidate}${path}`)
      return id === AMBIGUOUS || id === undefined ? UNKNOWN : { kind: 'page', id }
    }
  }
  const id = index.byPath.get(path)
  return id === AMBIGUOUS || id === undefined ? UNKNOWN : { kind: 'page', id }
}

/** Django's `[0-9]+` with leading zeros; Wagtail page ids start at 1 and must be exact in a double. */
function pageIdFromDigits(digits: string): number | undefined {
  const significant = digits.replace(/^0+/, '')
  if (significant === '' || significant.length > 16) return undefined
  const id = Number(significant)
  return Number.isSafeInteger(id) ? id : undefined
}

function stripQueryAndFragment(target: string): string {
  const end = target.search(/[?#]/)
  return end < 0 ? target : target.slice(0, end)
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

/**
 * Decodes percent-escapes so `/caf%C3%A9/`, `/caf%c3%a9/` and `/café/` compare equal (Django routes
 * on the decoded path too). A run of escapes that is not UTF-8 never throws: its ASCII bytes are
 * decoded and the rest kept as upper-case escapes, the same way on both sides of the comparison.
 */
function normalisePath(path: string): string {
  const decoded = path.replace(/(?:%[0-9A-Fa-f]{2})+/g, decodeRun)
  return decoded === '' ? '/' : decoded
}

function decodeRun(run: string): string {
  try {
    return decodeURIComponent(run)
  } catch {
    return run.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
      const byte = parseInt(hex, 16)
      return byte < 0x80 ? String.fromCharCode(byte) : escape.toUpperCase()
    })
  }
}

/**
 * The forms of a Host header to look up, most exact first. `html_url` hosts come from the WHATWG
 * URL parser (lower-cased, IDNA, default port dropped), so the header is run through it too; and a
 * URL written with its scheme's default port (`https://x:443/`) is sent as `x:443` but indexed as `x`.
 */
function hostCandidates(host: string): string[] {
  const lower = host.trim().toLowerCase()
  const candidates = [lower]
  // Only something shaped like an authority goes through the URL parser (no path, userinfo…).
  if (lower !== '' && !/[\s/?#@\\]/.test(lower)) {
    const parsed = parseUrl(`http://${lower}`)
    if (parsed !== undefined) candidates.push(parsed.host)
  }
  candidates.push(lower.replace(/:(?:80|443)$/, ''))
  return [...new Set(candidates)]
}

function indexOf(snapshot: Snapshot): HtmlUrlIndex {
  let index = indexes.get(snapshot)
  if (index === undefined) {
    index = buildIndex(snapshot)
    indexes.set(snapshot, index)
  }
  return index
}

/** Where a page's URL files it: host + path and path, path only (a relative URL), or nowhere. */
type UrlKeys = { readonly hostPath: string | undefined; readonly path: string } | null

/**
 * Each record's keys, kept with the record: a page carried over unchanged keeps its very record
 * (`build-snapshot.ts`), so a new snapshot's index parses only the pages that changed. Parsing
 * every item (JSON, then a URL) again would be paid on the first PURGE after each swap.
 */
const keysOfRecord = new WeakMap<PageRecord, UrlKeys>()

function urlKeys(page: PageRecord): UrlKeys {
  let keys = keysOfRecord.get(page)
  if (keys === undefined) {
    keys = readUrlKeys(page.listItem)
    keysOfRecord.set(page, keys)
  }
  return keys
}

function readUrlKeys(listItem: string): UrlKeys {
  const htmlUrl = htmlUrlOf(listItem)
  if (htmlUrl === undefined) return null
  const url = parseUrl(htmlUrl)
  if (url !== undefined) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
    const path = normalisePath(url.pathname)
    return { hostPath: `${url.host}${path}`, path }
  }
  // A site without a hostname gives a relative URL: it can only match by path.
  if (htmlUrl.startsWith('/') && !htmlUrl.startsWith('//')) return { hostPath: undefined, path: normalisePath(stripQueryAndFragment(htmlUrl)) }
  return null
}

function buildIndex(snapshot: Snapshot): HtmlUrlIndex {
  const byHostPath = new Map<string, number | null>()
  const byPath = new Map<string, number | null>()
  const add = (map: Map<string, number | null>, key: string, id: number) => {
    const existing = map.get(key)
    map.set(key, existing === undefined || existing === id ? id : AMBIGUOUS)
  }
  for (const page of snapshot.pages) {
    const keys = urlKeys(page)
    if (keys === null) continue
    if (keys.hostPath !== undefined) add(byHostPath, keys.hostPath, page.id)
    add(byPath, keys.path, page.id)
  }
  return { byHostPath, byPath }
}

/** One tape for every item read here: each is read to the end before the next is parsed. */
const itemTape = new JsonTape()

/** `meta.html_url` of a listing item, or `undefined` when it is null, missing or unreadable. */
function htmlUrlOf(listItem: string): string | undefined {
  if (!listItem.includes('"html_url"')) return undefined
  try {
    const tape = itemTape.parseText(listItem)
    const node = tape.path(0, ['meta', 'html_url'])
    return node >= 0 && tape.isString(node) ? tape.stringValue(node) : undefined
  } catch {
    return undefined
  }
}
