/**
 * A page loaded from a stored snapshot, whose listing items stay the stored UTF-8 bytes until one
 * of them is first read. A start otherwise made a string of every item, and the collector copied
 * each one from the young generation to the old while the rest were decoded: a good part of what
 * decoding cost (docs/performance.md, "Listing items kept as bytes until read"). A follower decodes only the items it lists; a syncing instance compares
 * them all in its first sync, after it is ready.
 *
 * The page is its own record: the build that loads it places it (`placed`) instead of copying
 * it. Both items are decoded together, the first time either is read, and the page then lets go
 * of the bytes, so once every page of a group was read (a sync compares every item) the group's
 * bytes are freed and what is left is what a synced page holds.
 *
 * The items are accessors: a spread (`{ ...page }`) does not copy them. Code that makes a page
 * from another names its fields (`carryOver` in `build-snapshot.ts`).
 * @module
 */
import type { DetailBody } from './detail-body.js'
import type { PageRecord } from './snapshot.js'

/** Where a stored page's items lie in its group's bytes. */
export interface StoredTexts {
  readonly bytes: Buffer
  /** The listing item is `bytes[start, listEnd)`. */
  readonly start: number
  readonly listEnd: number
  /** The typed item is `bytes[listEnd, typedEnd)`; -1 when the page has none. */
  readonly typedEnd: number
}

export class StoredPage implements PageRecord {
  /** -1 until a build places the page (see {@link placed}). */
  order = -1
  subtreeEnd = -1
  #bytes: Buffer | undefined
  #start: number
  #listEnd: number
  #typedEnd: number
  #listItem: string | undefined = undefined
  #typedListItem: string | undefined = undefined

  constructor(
    readonly id: number,
    readonly type: string,
    readonly title: string,
    readonly slug: string,
    readonly showInMenus: boolean,
    readonly seoTitle: string,
    readonly searchDescription: string,
    readonly parentId: number | null,
    readonly detail: DetailBody,
    readonly digest: string,
    texts: StoredTexts,
  ) {
    this.#bytes = texts.bytes
    this.#start = texts.start
    this.#listEnd = texts.listEnd
    this.#typedEnd = texts.typedEnd
  }

  get listItem(): string {
    if (this.#bytes !== undefined) this.#decode(this.#bytes)
    return this.#listItem!
  }

  get typedListItem(): string | undefined {
    if (this.#bytes !== undefined) this.#decode(this.#bytes)
    return this.#typedListItem
  }

  #decode(bytes: Buffer): void {
    this.#listItem = bytes.toString('utf8', this.#start, this.#listEnd)
    if (this.#typedEnd >= 0) this.#typedListItem = bytes.toString('utf8', this.#listEnd, this.#typedEnd)
    this.#bytes = undefined
  }

  /**
   * Whether this page is the record at `order`: it is where the build first places it, and
   * wherever it is placed again at the same place. Elsewhere the build makes a record of its own,
   * as for any page (the page is shared by the snapshots that kept it, and never moves once placed).
   */
  placed(order: number, subtreeEnd: number): boolean {
    if (this.order === -1) {
      this.order = order
      this.subtreeEnd = subtreeEnd
    }
    return this.order === order && this.subtreeEnd === subtreeEnd
  }
}
