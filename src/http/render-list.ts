/**
 * Writes a listing body in Wagtail's layout (docs/wagtail-compatibility.md#response-bodies): `{"meta": {"total_count": N},
 * "items": [...]}` with a 4-space indent, the items being the CMS's own listing items, already
 * formatted for their depth, or with `?fields=` the members of each page's stored detail that the
 * selection shows (docs/wagtail-compatibility.md#detail-fields), laid out for the items' depth.
 * @module
 */
import { getPath, parseJsonSpans, type ObjectNode } from '../json/json-spans.js'
import { selectMembers } from '../json/select-members.js'
import { membersOf } from '../query/field-selection.js'
import { bytesOf } from '../tree/detail-body.js'
import type { ListFields } from '../tree/page-selection.js'
import type { PageRecord } from '../tree/snapshot.js'

const ITEM_INDENT = '        '
/** An item is two levels down (the envelope, then `items`); a detail's members one. */
const ITEM_DEPTH = 2
const DEPTH_SHIFT = ITEM_INDENT.length

/** The listing's value of a page's `html_url` (it may differ from the detail's: a redirect's), as written. */
function htmlUrlOf(listItem: string): string | undefined {
  const node = getPath(parseJsonSpans(listItem), ['meta', 'html_url'])
  return node === undefined ? undefined : listItem.slice(node.start, node.end)
}

function itemOf(page: PageRecord, specific: boolean, fields: ListFields | undefined): string {
  const listItem = (specific && page.typedListItem) || page.listItem
  if (fields === undefined) return listItem
  const detail = bytesOf(page.detail).toString('utf8')
  return selectMembers(detail, parseJsonSpans(detail) as ObjectNode, membersOf(fields, htmlUrlOf(listItem)), ITEM_DEPTH, DEPTH_SHIFT)
}

/**
 * @param specific the query named exactly one page type: items come as that model serialises them.
 * @param fields `?fields=`'s selection; unset for the listing's default fields.
 */
export function renderList(totalCount: number, items: readonly PageRecord[], specific = false, fields?: ListFields): Buffer {
  const head = `{\n    "meta": {\n        "total_count": ${totalCount}\n    },\n    "items": `
  if (items.length === 0) return Buffer.from(`${head}[]\n}`, 'utf8')
  let body = `${head}[\n`
  for (let i = 0; i < items.length; i++) body += (i === 0 ? ITEM_INDENT : `,\n${ITEM_INDENT}`) + itemOf(items[i]!, specific, fields)
  return Buffer.from(`${body}\n    ]\n}`, 'utf8')
}
