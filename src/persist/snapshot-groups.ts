/**
 * Where a stored snapshot's pages are cut into groups (format 4, `snapshot-codec.ts`). Each group
 * is compressed on its own, and a whole save compresses again only the groups whose pages changed
 * since the previous one (`snapshot-encoder.ts`, docs/performance.md, "Whole saves that reuse").
 *
 * The cuts are content-defined: a group ends after a page whose digest hits a one-in-`oneIn`
 * condition once the group holds `minBytes` of details. Where a group ends depends on its own
 * pages, not on how many pages came before it, so a page inserted or removed moves only the
 * cut or two around it, and every later group keeps its pages and its stored bytes (with groups
 * of a fixed number of pages, every later group would shift by one page and be compressed
 * again). A group also ends before the next page's detail would take it past `maxBytes`, one slab
 * (`json/byte-slabs.ts`): decoded, a group's details part is the slab its pages' details are views
 * of. A page larger than that is a group of its own.
 * @module
 */
import { SLAB_BYTES } from '../json/byte-slabs.js'

export interface GroupRule {
  /** A group holds at least this many bytes of details before a digest may end it. */
  readonly minBytes: number
  /** After `minBytes`, each page ends its group with a chance of one in this many. */
  readonly oneIn: number
  /** A group never passes this many bytes of details, unless one page alone does. */
  readonly maxBytes: number
}

/**
 * A group holds `minBytes` of details before it may end, then ends after each page with a chance
 * of 1 in `oneIn`, so a typical group is somewhat more than `minBytes`, and few run into the
 * slab's bound (`maxBytes`). Each group is compressed alone, so brotli shares less across pages
 * the smaller the groups: smaller groups stored a larger snapshot, and this rule stays close to
 * format 3's few large parts (docs/performance.md, "Whole saves that reuse"). Closer to the slab,
 * more groups would end on the bound, where cuts no longer depend on content alone.
 */
export const GROUP_RULE: GroupRule = { minBytes: 160 * 1024, oneIn: 16, maxBytes: SLAB_BYTES }

/** What the rule reads of a page: the length of its detail and its digest (base64url, `pageDigest`). */
export interface GroupedPage {
  readonly detail: { readonly length: number }
  readonly digest: string
}

/**
 * FNV-1a over the digest's characters. A digest is already a hash, but a cheap hash of all of it
 * keeps the cuts well spread even for digests that are not (tests, forged input).
 */
export function endsGroup(digest: string, oneIn: number): boolean {
  let hash = 0x811c9dc5
  for (let index = 0; index < digest.length; index++) hash = Math.imul(hash ^ digest.charCodeAt(index), 0x01000193)
  return (hash >>> 0) % oneIn === 0
}

/** The exclusive end of each group of `pages`, in order (none for no pages). */
export function groupEnds(pages: readonly GroupedPage[], rule: GroupRule = GROUP_RULE): number[] {
  const ends: number[] = []
  let bytes = 0
  for (let index = 0; index < pages.length; index++) {
    const page = pages[index]!
    bytes += page.detail.length
    const next = pages[index + 1]
    if (next === undefined || bytes + next.detail.length > rule.maxBytes || (bytes >= rule.minBytes && endsGroup(page.digest, rule.oneIn))) {
      ends.push(index + 1)
      bytes = 0
    }
  }
  return ends
}
