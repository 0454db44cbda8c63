/**
 * One page as a line of JSON: a positional array `[id, type, title, slug, showInMenus, seoTitle,
 * searchDescription, parentId, listItem, detail]`, with `typedListItem` appended when the page has
 * one. Patches carry their pages as these lines (`snapshot-patch.ts`), and format-2 snapshots
 * stored every page as one (`snapshot-legacy-readers.ts`).
 * @module
 */
import type { SyncedPage } from '../tree/build-snapshot.js'

/** One page's line (also a patch's page lines). */
export function pageLine(page: SyncedPage): Buffer {
  const line: unknown[] = [
    page.id, page.type, page.title, page.slug, page.showInMenus, page.seoTitle, page.searchDescription, page.parentId,
    page.listItem, page.detail,
  ]
  if (page.typedListItem !== undefined) line.push(page.typedListItem)
  return Buffer.from(JSON.stringify(line), 'utf8')
}

/** One parsed page line, or `undefined` when it is not one. */
export function readPage(line: unknown): SyncedPage | undefined {
  if (!Array.isArray(line) || (line.length !== 10 && line.length !== 11)) return undefined
  const [id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, listItem, detail, typedListItem] = line as unknown[]
  if (!Number.isSafeInteger(id)) return undefined
  if (parentId !== null && !Number.isSafeInteger(parentId)) return undefined
  if (typeof showInMenus !== 'boolean') return undefined
  if (
    typeof type !== 'string' || typeof title !== 'string' || typeof slug !== 'string' || typeof seoTitle !== 'string' ||
    typeof searchDescription !== 'string' || typeof listItem !== 'string' || typeof detail !== 'string'
  ) return undefined
  if (line.length === 11 && typeof typedListItem !== 'string') return undefined
  const page: SyncedPage = {
    id: id as number, type, title, slug, showInMenus, seoTitle, searchDescription, parentId: parentId as number | null, listItem, detail,
  }
  return typeof typedListItem === 'string' ? { ...page, typedListItem } : page
}
