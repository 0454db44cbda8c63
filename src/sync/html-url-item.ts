/**
 * A listing item's `meta.html_url`, read and written in the item's own text. A listing read
 * without `html_url` (`fields=-html_url`, docs/wagtail-compatibility.md#response-bodies: a `-name`
 * removes a default field) gives the default item less that one member; the serializer writes
 * `meta` in one fixed order (`type`, `detail_url`, `html_url`, `slug`, …), so writing the member
 * back right after `detail_url`, with the separators the item itself uses between `type` and
 * `detail_url`, gives the default item byte for byte. Whether that holds for the CMS at hand is
 * probed once (`probe-bare-listing.ts`) and checked for every page whenever the listing is read
 * with `html_url` (`url-anchors.ts`). No parse: a scan of the few members before `html_url`.
 * Pure.
 * @module
 */
import { jsonString } from '../json/json-text.js'

/** End (exclusive) of the JSON string token starting at `at` (its opening quote), or -1. */
function stringEnd(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x22) return -1
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5c) i++
    else if (c === 0x22) return i + 1
  }
  return -1
}

/** End of the scalar value (a string or `null`) at `at`, or -1. */
function scalarEnd(text: string, at: number): number {
  if (text.startsWith('null', at)) return at + 4
  return stringEnd(text, at)
}

/** Skips a key/value separator (`:` with optional blanks) at `at`; -1 when there is none. */
function afterColon(text: string, at: number): number {
  const match = /^[ \t\r\n]*:[ \t\r\n]*/.exec(text.slice(at, at + 16))
  return match ? at + match[0].length : -1
}

interface MetaLayout {
  /** The separator the item writes between two members of `meta` (`,` and the indentation). */
  readonly comma: string
  /** Between a key and its value. */
  readonly colon: string
  /** Where `detail_url`'s value ends: `html_url` follows it. */
  readonly afterDetailUrl: number
}

/** Where `meta.type` and `meta.detail_url` sit in an item's text, and how it separates members. */
function layoutOf(item: string): MetaLayout | undefined {
  const meta = item.indexOf('"meta"')
  if (meta < 0) return undefined
  const open = afterColon(item, meta + 6)
  if (open < 0 || item.charCodeAt(open) !== 0x7b) return undefined
  const typeKey = item.indexOf('"type"', open)
  if (typeKey < 0 || item.slice(open + 1, typeKey).trim() !== '') return undefined
  const typeValue = afterColon(item, typeKey + 6)
  const typeEnd = typeValue < 0 ? -1 : scalarEnd(item, typeValue)
  if (typeEnd < 0) return undefined
  const urlKey = item.indexOf('"detail_url"', typeEnd)
  if (urlKey < 0) return undefined
  const comma = item.slice(typeEnd, urlKey)
  if (!/^,[ \t\r\n]*$/.test(comma)) return undefined
  const urlValue = afterColon(item, urlKey + 12)
  const urlEnd = urlValue < 0 ? -1 : stringEnd(item, urlValue)
  if (urlEnd < 0) return undefined
  return { comma, colon: item.slice(urlKey + 12, urlValue), afterDetailUrl: urlEnd }
}

/** Span of the `html_url` member (separator included) right after `detail_url`, when there is one. */
function htmlUrlMember(item: string, layout: MetaLayout): { start: number; valueStart: number; end: number } | undefined {
  const key = layout.afterDetailUrl + layout.comma.length
  if (!item.startsWith(`${layout.comma}"html_url"`, layout.afterDetailUrl)) return undefined
  const value = afterColon(item, key + 10)
  const end = value < 0 ? -1 : scalarEnd(item, value)
  return end < 0 ? undefined : { start: layout.afterDetailUrl, valueStart: value, end }
}

/**
 * `item` with `meta.html_url` set to `url`: written after `detail_url` when the item has none,
 * its value replaced when it has. `undefined` when the item is not laid out as Wagtail writes it.
 */
export function withHtmlUrl(item: string, url: string | null): string | undefined {
  const layout = layoutOf(item)
  if (!layout) return undefined
  const value = url === null ? 'null' : jsonString(url)
  const member = htmlUrlMember(item, layout)
  if (member) return `${item.slice(0, member.valueStart)}${value}${item.slice(member.end)}`
  const at = layout.afterDetailUrl
  return `${item.slice(0, at)}${layout.comma}"html_url"${layout.colon}${value}${item.slice(at)}`
}

/** The item's `meta.html_url` (`null` included); `undefined` when it shows none where Wagtail writes it. */
export function htmlUrlOfItem(item: string): string | null | undefined {
  const layout = layoutOf(item)
  const member = layout && htmlUrlMember(item, layout)
  if (!member) return undefined
  const token = item.slice(member.valueStart, member.end)
  return token === 'null' ? null : (JSON.parse(token) as string)
}
