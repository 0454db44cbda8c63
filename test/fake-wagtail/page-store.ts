/**
 * The fake CMS's editable page list. Sibling order is array order; the derived `SiteIndex` is rebuilt
 * lazily after a mutation so a burst of edits costs one rebuild.
 * @module
 */
import { PageModelRegistry } from './page-models.js'
import { buildSiteIndex, replacePageInPlace } from './site-index.js'
import type { SiteIndex, SiteUrls } from './site-index.js'
import type { FakePage } from './types.js'

function copyPage(page: FakePage): FakePage {
  return { ...page }
}

export class PageStore {
  readonly models = new PageModelRegistry()
  private list: FakePage[] = []
  private index: SiteIndex | undefined

  constructor(
    pages: readonly FakePage[],
    private readonly urls: SiteUrls,
  ) {
    this.setPages(pages)
  }

  /** The index for the tree as it is now. */
  current(): SiteIndex {
    this.index ??= buildSiteIndex(this.list, this.models, this.urls)
    return this.index
  }

  pages(): FakePage[] {
    return this.list.map(copyPage)
  }

  setPages(pages: readonly FakePage[]): void {
    const ids = new Set<number>()
    for (const page of pages) {
      if (ids.has(page.id)) throw new Error(`fake-wagtail: duplicate page id ${page.id}`)
      ids.add(page.id)
    }
    this.list = pages.map(copyPage)
    for (const page of this.list) this.models.observe(page)
    this.changed()
  }

  updatePage(id: number, patch: Partial<FakePage>): void {
    const position = this.positionOf(id)
    if (patch.id !== undefined && patch.id !== id) throw new Error('fake-wagtail: updatePage cannot change a page id')
    const page = { ...(this.list[position] as FakePage), ...patch }
    this.list[position] = page
    this.models.observe(page)
    if (this.index === undefined || !replacePageInPlace(this.index, page, Object.keys(patch))) this.changed()
  }

  addPage(page: FakePage, options: { after?: number } = {}): void {
    if (this.list.some((p) => p.id === page.id)) throw new Error(`fake-wagtail: page ${page.id} already exists`)
    const copy = copyPage(page)
    if (options.after === undefined) {
      this.list.push(copy)
    } else {
      const position = this.positionOf(options.after)
      if ((this.list[position] as FakePage).parentId !== page.parentId) {
        throw new Error(`fake-wagtail: page ${options.after} is not a sibling of page ${page.id}`)
      }
      this.list.splice(position + 1, 0, copy)
    }
    this.models.observe(copy)
    this.changed()
  }

  removePage(id: number): void {
    this.positionOf(id)
    const doomed = this.subtreeIds(id)
    this.list = this.list.filter((page) => !doomed.has(page.id))
    this.changed()
  }

  movePage(id: number, newParentId: number): void {
    const position = this.positionOf(id)
    this.positionOf(newParentId)
    if (this.subtreeIds(id).has(newParentId)) throw new Error(`fake-wagtail: cannot move page ${id} below itself`)
    const [page] = this.list.splice(position, 1) as [FakePage]
    // Appended at the end of the array = last among its new siblings.
    this.list.push({ ...page, parentId: newParentId })
    this.changed()
  }

  private positionOf(id: number): number {
    const position = this.list.findIndex((page) => page.id === id)
    if (position < 0) throw new Error(`fake-wagtail: no page ${id}`)
    return position
  }

  /** The page and all its descendants by parent links (independent of reachability from the root). */
  private subtreeIds(id: number): Set<number> {
    const childrenOf = new Map<number, number[]>()
    for (const page of this.list) {
      if (page.parentId === null) continue
      const siblings = childrenOf.get(page.parentId)
      if (siblings) siblings.push(page.id)
      else childrenOf.set(page.parentId, [page.id])
    }
    const ids = new Set<number>([id])
    const queue = [id]
    while (queue.length > 0) {
      for (const child of childrenOf.get(queue.pop() as number) ?? []) {
        if (!ids.has(child)) {
          ids.add(child)
          queue.push(child)
        }
      }
    }
    return ids
  }

  private changed(): void {
    this.index = undefined
  }
}
