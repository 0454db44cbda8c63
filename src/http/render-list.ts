/**
 * Writes a listing body in Wagtail's layout (docs/wagtail-compatibility.md#response-bodies): `{"meta": {"total_count": N},
 * "items": [...]}` with a 4-space indent, the items being the CMS's own listing items, already
 * formatted for their depth.
 * @module
 */
import type { PageRecord } from '../tree/snapshot.js'

const ITEM_INDENT = '        '

/**
 * @param specific the query named exactly one page type: items come as that model serialises them.
 */
export function renderList(totalCount: number, items: readonly PageRecord[], specific = false): Buffer {
  const head = `{\n    "meta": {\n        "total_count": ${totalCount}\n    },\n    "items": `
  if (items.length === 0) return Buffer.from(`${head}[]\n}`, 'utf8')
  let body = `${head}[\n`
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    body += (i === 0 ? ITEM_INDENT : `,\n${ITEM_INDENT}`) + ((specific && item.typedListItem) || item.listItem)
  }
  return Buffer.from(`${body}\n    ]\n}`, 'utf8')
}
