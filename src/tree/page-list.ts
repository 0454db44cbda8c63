/**
 * A snapshot's pages in tree order, read by position: one frozen array, or, after a patch in
 * place (`patchSnapshot`), the previous snapshot's array with the replaced records laid over it.
 *
 * Copying the array per patch costs little CPU, but a large tree's array of pointers is allocated
 * straight into V8's large-object space, which only a full mark-compact frees: a stream of edits
 * alone then brought regular major collections and their pauses (docs/performance.md, "Where a
 * swap's p99 goes"). Sharing the array costs what changed.
 *
 * As with `patched-map.ts`, layers never nest: patching a patched list merges the changes into
 * one overlay over the same array, and past `maxOverlay` replaced records the next patch writes
 * one flat array again, so a read is at most one `Map` read and one array read.
 * @module
 */
import type { PageRecord } from './snapshot.js'

/**
 * What readers of a page sequence may rely on, met by a plain array as by a {@link PageList}:
 * a sync hands on either (the pages it listed, or the snapshot's own when nothing moved).
 */
export type PageSequence<T> = Pick<ReadonlyArray<T>, 'length' | 'at' | 'slice'> & Iterable<T>

/** `pages` as an array: itself when it is one, a copy of a {@link PageList}. */
export function pagesArray<T>(pages: PageSequence<T>): readonly T[] {
  return Array.isArray(pages) ? (pages as readonly T[]) : pages.slice()
}

const NO_OVERLAY: ReadonlyMap<number, PageRecord> = new Map()

/** Replaced records past which a patch writes a flat array again. */
export const MAX_LIST_OVERLAY = 4_096

export class PageList implements PageSequence<PageRecord> {
  private constructor(
    private readonly base: readonly PageRecord[],
    /** Position → the record that replaces `base`'s there. */
    private readonly overlay: ReadonlyMap<number, PageRecord>,
  ) {
    Object.freeze(this)
  }

  /** The list of `records`, which it freezes and keeps (not a copy). */
  static of(records: PageRecord[]): PageList {
    return new PageList(Object.freeze(records), NO_OVERLAY)
  }

  get length(): number {
    return this.base.length
  }

  /** The page at `order` (0-based tree order; negative counts from the end, as `Array.prototype.at`). */
  at(index: number): PageRecord | undefined {
    const order = index < 0 ? this.base.length + Math.trunc(index) : Math.trunc(index)
    if (this.overlay.size > 0) {
      const replaced = this.overlay.get(order)
      if (replaced !== undefined) return replaced
    }
    return this.base[order]
  }

  /** A new array of the pages in `[start, end)`, as `Array.prototype.slice` takes its bounds. */
  slice(start?: number, end?: number): PageRecord[] {
    // A loop, not slice(): slice() of a frozen array takes V8's slow path.
    const from = clamp(start ?? 0, this.length)
    const to = clamp(end ?? this.length, this.length)
    const out: PageRecord[] = []
    for (let order = from; order < to; order++) out.push(this.base[order]!)
    if (this.overlay.size > 0) {
      for (const [order, record] of this.overlay) if (order >= from && order < to) out[order - from] = record
    }
    return out
  }

  [Symbol.iterator](): Iterator<PageRecord> {
    return this.overlay.size === 0 ? this.base[Symbol.iterator]() : this.overlaid()
  }

  private *overlaid(): Generator<PageRecord> {
    for (let order = 0; order < this.base.length; order++) yield this.overlay.get(order) ?? this.base[order]!
  }

  /**
   * This list with the records of `changes` (position → record, every position inside the list)
   * in place. Small changes share the array; past `maxOverlay` replaced records in all, a flat
   * array is written (a copy of pointers, which is cheap).
   */
  with(changes: ReadonlyMap<number, PageRecord>, maxOverlay = MAX_LIST_OVERLAY): PageList {
    const overlay = new Map(this.overlay)
    for (const [order, record] of changes) {
      if (!Number.isInteger(order) || order < 0 || order >= this.length) throw new RangeError(`PageList: position ${order} is outside the list of ${this.length}`)
      overlay.set(order, record)
    }
    if (overlay.size <= maxOverlay) return new PageList(this.base, overlay)
    // Spread, not slice(): slice() of a frozen array takes V8's slow path.
    const flat = [...this.base]
    for (const [order, record] of overlay) flat[order] = record
    return PageList.of(flat)
  }
}

/** `index` as `Array.prototype.slice` reads a bound: negative counts from the end. */
function clamp(index: number, length: number): number {
  const whole = Math.trunc(index) || 0
  return whole < 0 ? Math.max(0, length + whole) : Math.min(whole, length)
}
