/**
 * Points every `meta.detail_url` in a CMS body at the proxy instead of the CMS.
 *
 * Wagtail writes `detail_url` in each `meta` object: the page's own, `parent`'s, `alias_of`'s, the
 * `meta` of foreign keys among the type-specific fields, and every listing item's. Only string values
 * directly under a key `meta` are touched: a StreamField block may well carry its own `detail_url`
 * key, and `html_url` points at the public site, not at the API. All other bytes stay identical.
 *
 * The target is always the configured `baseUrl`, never a request's Host header: a Host header is
 * client-controlled, and cached bodies are shared between clients.
 * @module
 */

import { parseJsonSpans, type JsonNode, type ParseOptions, type StringNode } from './json-spans.js'
import { jsonString, spliceText, type TextEdit } from './json-text.js'

/** Returns the replacement URL, or `undefined` to leave the URL alone. */
export type RewriteUrl = (url: string) => string | undefined

export interface UrlRewriterOptions {
  /** The proxy's public base URL, e.g. `https://cms.example.com` or `https://example.com/shield`. */
  readonly baseUrl: string
  /** Where the CMS is mounted on its own host (`''` at the root, or e.g. `/cms`). */
  readonly upstreamPathPrefix?: string
  /** The API path below the mount point whose URLs are ours to serve. */
  readonly apiPath?: string
}

export const DEFAULT_API_PATH = '/api/v1/cms/'

/**
 * Builds a `RewriteUrl` that maps CMS API URLs (absolute with any scheme/host, protocol-relative, or
 * a path starting with `/`) onto `baseUrl`, keeping path, query and fragment byte for byte.
 * The URL is split by hand rather than with `new URL`, which would normalise (percent-encoding,
 * dot segments, default ports) and so change bytes the CMS chose.
 */
export function createUrlRewriter(options: UrlRewriterOptions): RewriteUrl {
  const base = normaliseBaseUrl(options.baseUrl)
  const prefix = normalisePrefix(options.upstreamPathPrefix ?? '')
  const apiPath = options.apiPath ?? DEFAULT_API_PATH
  if (!apiPath.startsWith('/')) throw new TypeError(`apiPath must start with '/': ${apiPath}`)

  return (url) => {
    const split = splitUrl(url)
    if (split === undefined) return undefined
    let path = split.path
    if (prefix !== '' && path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47 /* / */) {
      path = path.slice(prefix.length)
    }
    if (!path.startsWith(apiPath)) return undefined
    return base + path + split.rest
  }
}

function normaliseBaseUrl(baseUrl: string): string {
  let parsed: URL
  try {
    parsed = new URL(baseUrl)
  } catch {
    throw new TypeError(`baseUrl is not an absolute URL: ${baseUrl}`)
  }
  if (parsed.search !== '' || parsed.hash !== '' || baseUrl.includes('?') || baseUrl.includes('#')) {
    throw new TypeError(`baseUrl must not have a query or fragment: ${baseUrl}`)
  }
  // Kept as written (minus trailing slashes): the operator's spelling is what clients should see.
  return baseUrl.replace(/\/+$/, '')
}

function normalisePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '')
  if (trimmed === '') return ''
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`
}

const SCHEME_AND_SLASHES = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

/** Splits a URL into its path and the rest (`?query#fragment`); `undefined` if it has no usable path. */
function splitUrl(url: string): { path: string; rest: string } | undefined {
  let i: number
  const scheme = SCHEME_AND_SLASHES.exec(url)
  if (scheme !== null) i = skipAuthority(url, scheme[0].length)
  else if (url.startsWith('//')) i = skipAuthority(url, 2)
  else if (url.startsWith('/')) i = 0
  else return undefined
  let end = i
  while (end < url.length) {
    const c = url.charCodeAt(end)
    if (c === 63 /* ? */ || c === 35 /* # */) break
    end++
  }
  return { path: url.slice(i, end), rest: url.slice(end) }
}

function skipAuthority(url: string, i: number): number {
  while (i < url.length) {
    const c = url.charCodeAt(i)
    if (c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) break
    i++
  }
  return i
}

/** An edit that replaces one `meta.detail_url` string token; `url` is the new decoded value. */
export interface DetailUrlEdit extends TextEdit {
  readonly node: StringNode
  readonly url: string
}

/**
 * Finds every string `detail_url` directly inside an object that is the value of a `meta` key, at
 * any depth, and returns edits (in document order) for those `rewriteUrl` changes.
 */
export function findDetailUrlEdits(root: JsonNode, rewriteUrl: RewriteUrl): DetailUrlEdit[] {
  const edits: DetailUrlEdit[] = []
  // Recursion depth is bounded by the parser's maxDepth.
  const visit = (node: JsonNode, isMeta: boolean): void => {
    if (node.kind === 'array') {
      for (const item of node.items) visit(item, false)
    } else if (node.kind === 'object') {
      for (const { key, value } of node.entries) {
        if (isMeta && key === 'detail_url' && value.kind === 'string') {
          const url = rewriteUrl(value.value)
          // An unchanged URL keeps its original token, whatever escaping the CMS used.
          if (url !== undefined && url !== value.value) {
            edits.push({ start: value.start, end: value.end, replacement: jsonString(url), node: value, url })
          }
        } else {
          visit(value, key === 'meta' && value.kind === 'object')
        }
      }
    }
  }
  visit(root, false)
  return edits
}

/** Parses `text`, rewrites its `meta.detail_url`s, and returns the new text. */
export function rewriteDetailUrls(
  text: string,
  rewriteUrl: RewriteUrl,
  options?: ParseOptions,
): { text: string; changed: number } {
  const edits = findDetailUrlEdits(parseJsonSpans(text, options), rewriteUrl)
  return { text: spliceText(text, edits), changed: edits.length }
}

/**
 * Like `rewriteDetailUrls`, but also returns the parse tree with spans (and the rewritten string
 * values) adjusted to the *new* text, so callers can slice items out of it without parsing twice.
 * A tree from `parseJsonSpans` is otherwise stale after any splice: re-parse the new text instead.
 */
export function rewriteDetailUrlsWithSpans(
  text: string,
  rewriteUrl: RewriteUrl,
  options?: ParseOptions,
): { text: string; root: JsonNode; changed: number } {
  const root = parseJsonSpans(text, options)
  const edits = findDetailUrlEdits(root, rewriteUrl)
  if (edits.length === 0) return { text, root, changed: 0 }
  const newText = spliceText(text, edits)
  shiftSpans(root, edits)
  for (const edit of edits) edit.node.value = edit.url
  return { text: newText, root, changed: edits.length }
}

/**
 * Moves every offset in the tree by the net length change of the edits that end at or before it.
 * A depth-first walk meets `start`, each `keyStart`, and `end` in increasing order, so one cursor
 * over the (document-ordered, non-overlapping, leaf-only) edits suffices: O(nodes + edits).
 */
function shiftSpans(root: JsonNode, edits: readonly TextEdit[]): void {
  let next = 0
  let delta = 0
  const shift = (offset: number): number => {
    while (next < edits.length) {
      const edit = edits[next] as TextEdit
      if (edit.end > offset) break
      delta += edit.replacement.length - (edit.end - edit.start)
      next++
    }
    return offset + delta
  }
  const visit = (node: JsonNode): void => {
    node.start = shift(node.start)
    if (node.kind === 'array') {
      for (const item of node.items) visit(item)
    } else if (node.kind === 'object') {
      for (const entry of node.entries) {
        entry.keyStart = shift(entry.keyStart)
        visit(entry.value)
      }
    }
    node.end = shift(node.end)
  }
  visit(root)
}
