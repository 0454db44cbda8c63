/**
 * The listing pass asks for the generic meta fields that the default listing leaves out but the
 * index filters on (`show_in_menus`, `seo_title`, `search_description`; docs/wagtail-compatibility.md#response-bodies: a plain
 * name adds a field to the default set), so a re-flagged page shows in the listing itself. When
 * the default listing leaves out `locale` too (WAGTAIL_I18N_ENABLED off), it asks for that as
 * well: `fields=*` and `fields=locale` show it, and the pass learns the one language every page
 * has (docs/wagtail-compatibility.md#detail-fields). The snapshot keeps the default listing item,
 * so those members are cut out of each item again: the serializer writes every field in one fixed
 * order (docs/wagtail-compatibility.md#response-bodies), so what remains is byte for byte the
 * default item. Whether that holds for the CMS at hand is probed once (`probeListingFields`).
 * @module
 */
import { getMember, getPath, parseJsonSpans, type JsonNode, type ObjectNode } from '../json/json-spans.js'
import { spliceText, type TextEdit } from '../json/json-text.js'
import type { UpstreamGet } from './upstream-port.js'

export const EXTRA_LISTING_FIELDS = ['show_in_menus', 'seo_title', 'search_description'] as const

/** What a listing pass asks for beyond the flags above, and cuts out again. */
export interface ListingExtras {
  /** `locale` too: the default listing leaves it out (WAGTAIL_I18N_ENABLED off). */
  readonly locale: boolean
}

const FLAGS_ONLY: ListingExtras = Object.freeze({ locale: false })
const WITH_LOCALE: ListingExtras = Object.freeze({ locale: true })

const namesOf = (extras: ListingExtras): readonly string[] => (extras.locale ? [...EXTRA_LISTING_FIELDS, 'locale'] : EXTRA_LISTING_FIELDS)

/** Query parameter (with its `&`) that asks the listing for the extra fields. */
export function listingFieldsParam(extras: ListingExtras): string {
  return `fields=${namesOf(extras).join(',')}&`
}

/**
 * The `fields` parameter (with its `&`, or nothing) of a listing pass: the extra fields, and
 * without `html_url` when the sync derives it (`derive-urls.ts`; a `-name` removes a default field).
 */
export function passFieldsParam(extras: ListingExtras | undefined, withoutUrl: boolean): string {
  const names = [...(withoutUrl ? ['-html_url'] : []), ...(extras ? namesOf(extras) : [])]
  return names.length === 0 ? '' : `fields=${names.join(',')}&`
}

/**
 * The item's text without the extra meta members. `item` spans are offsets into `text`, the
 * whole body; `start`/`end` are the item's own span. A member is removed together with the
 * separator before it (it is never the first: `type` always leads `meta`).
 */
export function stripExtraFields(text: string, item: JsonNode, extras: ListingExtras): string {
  const own = text.slice(item.start, item.end)
  const meta = getMember(item, 'meta')
  if (meta?.kind !== 'object') return own
  const names = namesOf(extras)
  const edits: TextEdit[] = []
  const entries = (meta as ObjectNode).entries
  for (let i = 1; i < entries.length; i++) {
    const entry = entries[i]!
    if (!names.includes(entry.key)) continue
    edits.push({ start: entries[i - 1]!.value.end - item.start, end: entry.value.end - item.start, replacement: '' })
  }
  return edits.length === 0 ? own : spliceText(own, edits)
}

/** An item's `meta.locale` when the listing was asked for it: `null` when it is not a string. */
export function localeOfItem(item: JsonNode): string | null {
  const node = getPath(item, ['meta', 'locale'])
  return node?.kind === 'string' ? node.value : null
}

function items(text: string): { text: string; items: readonly JsonNode[] } | undefined {
  try {
    const root = parseJsonSpans(text)
    const list = getMember(root, 'items')
    return list?.kind === 'array' ? { text, items: list.items } : undefined
  } catch {
    return undefined
  }
}

/** Whether cutting `extras` out of `extended`'s items gives `plain`'s items exactly. */
function sameItems(plain: NonNullable<ReturnType<typeof items>>, extended: ReturnType<typeof items>, extras: ListingExtras): boolean {
  if (!extended || extended.items.length !== plain.items.length) return false
  return plain.items.every((item, i) => plain.text.slice(item.start, item.end) === stripExtraFields(extended.text, extended.items[i]!, extras))
}

/**
 * Asks for the first few items both ways and checks that cutting the extra members out gives the
 * default items exactly. `locale` is asked for along with the flags; it is cut out again only
 * when the default items leave it out, and given up (keeping the flags, one request more) when
 * the CMS refuses it. `undefined` when the CMS refuses the flags (Wagtail 8.0 without these
 * fields on its Page model) or answers in another layout: the listing is then read without them.
 */
export async function probeListingFields(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<ListingExtras | undefined> {
  const [plain, extended] = await Promise.all([
    get(`${pagesPath}?limit=3`, signal),
    get(`${pagesPath}?${listingFieldsParam(WITH_LOCALE)}limit=3`, signal),
  ])
  const a = plain.status === 200 ? items(plain.text) : undefined
  if (!a || a.items.length === 0) return undefined
  // A default item with `locale` shows it whether asked for or not: only the flags are extra.
  const extras = a.items.every((item) => localeOfItem(item) !== null) ? FLAGS_ONLY : WITH_LOCALE
  if (extended.status === 200 && sameItems(a, items(extended.text), extras)) return extras
  if (extras === FLAGS_ONLY || extended.status === 200) return undefined
  const flagsOnly = await get(`${pagesPath}?${listingFieldsParam(FLAGS_ONLY)}limit=3`, signal)
  return flagsOnly.status === 200 && sameItems(a, items(flagsOnly.text), FLAGS_ONLY) ? FLAGS_ONLY : undefined
}
