/**
 * The listing pass asks for the generic meta fields that the default listing leaves out but the
 * index filters on (`show_in_menus`, `seo_title`, `search_description`; docs/wagtail-compatibility.md#response-bodies: a plain
 * name adds a field to the default set), so a re-flagged page shows in the listing itself. The
 * snapshot keeps the default listing item, so those members are cut out of each item again: the
 * serializer writes every field in one fixed order (docs/wagtail-compatibility.md#response-bodies), so what remains is byte for byte
 * the default item. Whether that holds for the CMS at hand is probed once (`probeListingFields`).
 * @module
 */
import { getMember, parseJsonSpans, type JsonNode, type ObjectNode } from '../json/json-spans.js'
import { spliceText, type TextEdit } from '../json/json-text.js'
import type { UpstreamGet } from './upstream-port.js'

export const EXTRA_LISTING_FIELDS = ['show_in_menus', 'seo_title', 'search_description'] as const

/** Query parameter (with its `&`) that asks the listing for the extra fields. */
export const LISTING_FIELDS_PARAM = `fields=${EXTRA_LISTING_FIELDS.join(',')}&`

/**
 * The item's text without the extra meta members. `item` spans are offsets into `text`, the
 * whole body; `start`/`end` are the item's own span. A member is removed together with the
 * separator before it (it is never the first: `type` always leads `meta`).
 */
export function stripExtraFields(text: string, item: JsonNode): string {
  const own = text.slice(item.start, item.end)
  const meta = getMember(item, 'meta')
  if (meta?.kind !== 'object') return own
  const edits: TextEdit[] = []
  const entries = (meta as ObjectNode).entries
  for (let i = 1; i < entries.length; i++) {
    const entry = entries[i]!
    if (!(EXTRA_LISTING_FIELDS as readonly string[]).includes(entry.key)) continue
    edits.push({ start: entries[i - 1]!.value.end - item.start, end: entry.value.end - item.start, replacement: '' })
  }
  return edits.length === 0 ? own : spliceText(own, edits)
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

/**
 * Asks for the first few items both ways and checks that cutting the extra members out gives the
 * default items exactly. False when the CMS refuses the fields (Wagtail 8.0 without these
 * fields on its Page model) or answers in another layout: the listing is then read without them.
 */
export async function probeListingFields(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<boolean> {
  const [plain, extended] = await Promise.all([
    get(`${pagesPath}?limit=3`, signal),
    get(`${pagesPath}?${LISTING_FIELDS_PARAM}limit=3`, signal),
  ])
  if (plain.status !== 200 || extended.status !== 200) return false
  const a = items(plain.text)
  const b = items(extended.text)
  if (!a || !b || a.items.length !== b.items.length || a.items.length === 0) return false
  return a.items.every((item, i) => a.text.slice(item.start, item.end) === stripExtraFields(b.text, b.items[i]!))
}
