/**
 * A page's `html_url` as the untyped listing writes it, from the tree: Wagtail's `Page.full_url`
 * is its Site's root URL followed by the slugs of its ancestors below the Site root, each with a
 * trailing slash (docs/wagtail-compatibility.md#response-bodies). So a page's URL is its parent's
 * followed by its own slug and `/`, and a page below one without a URL has none either.
 *
 * What does not follow from the parent (a Site root, a translated root under its language prefix,
 * a page whose parent the listing does not show, a nested Site's root) is *learned*, not assumed:
 * {@link learnAnchors} compares every page's URL with the one its parent's gives, and keeps the
 * pages where they differ as anchors, whose URLs the CMS wrote at the last full read
 * (docs/architecture.md#decisions, "Listing without html_url"). The untyped listing serialises the
 * generic Page model, so a model's own `get_url_parts` (a RedirectPage's external address) shows
 * only in typed listings and details, which the sync reads as it does without derivation. Pure.
 * @module
 */

export interface UrlPlace {
  readonly id: number
  readonly slug: string
  /** `null`: the page has no parent in the listing (a root, or a parent that is not visible). */
  readonly parentId: number | null
}

/**
 * Pages whose URL does not follow from their parent's, with their URLs, taken between full syncs
 * as the last full read saw them. A tree with more (many pages below unpublished parents, whose
 * URLs follow slugs the listing does not show) is read with `html_url`.
 */
export const MAX_ANCHORS = 100

/** Django's `reverse()` quoting of a path segment (RFC 3986 unreserved and sub-delims, `:@~` stay raw). */
export function quoteSlug(slug: string): string {
  if (/^[A-Za-z0-9\-._~]*$/.test(slug)) return slug
  return encodeURIComponent(slug).replace(/%(24|26|2B|2C|3B|3D|3A|40)/g, (escaped) => decodeURIComponent(escaped))
}

/** A child's URL below a parent's: `null` below a page without one. */
export function childUrl(parentUrl: string | null, slug: string): string | null {
  return parentUrl === null ? null : `${parentUrl}${quoteSlug(slug)}/`
}

/**
 * URLs a page at a time, in tree order (a parent before its children): an anchor has its own; any
 * other page its parent's followed by its slug. `undefined` for a page whose URL does not follow:
 * no parent and not an anchor, or a parent not added before it.
 */
export class UrlDeriver {
  readonly #urls = new Map<number, string | null | undefined>()

  constructor(private readonly anchors: ReadonlyMap<number, string | null>) {}

  add(page: UrlPlace): string | null | undefined {
    const anchored = this.anchors.get(page.id)
    let url: string | null | undefined
    if (anchored !== undefined || this.anchors.has(page.id)) url = anchored ?? null
    else {
      const parentUrl = page.parentId === null ? undefined : this.#urls.get(page.parentId)
      url = parentUrl === undefined ? undefined : childUrl(parentUrl, page.slug)
    }
    this.#urls.set(page.id, url)
    return url
  }
}

/** Every page's URL, in the order given (tree order), as {@link UrlDeriver} gives them. */
export function deriveUrls(pages: Iterable<UrlPlace>, anchors: ReadonlyMap<number, string | null>): Map<number, string | null | undefined> {
  const deriver = new UrlDeriver(anchors)
  const urls = new Map<number, string | null | undefined>()
  for (const page of pages) urls.set(page.id, deriver.add(page))
  return urls
}

export type WithUrl<P> = P & { readonly htmlUrl: string | null }

/** Whether a page's URL is its parent's followed by its slug. */
const followsParent = (page: WithUrl<UrlPlace>, parentUrl: string | null): boolean => childUrl(parentUrl, page.slug) === page.htmlUrl

/**
 * The anchors of a tree whose URLs the CMS wrote, a page at a time in tree order: the pages whose
 * URL is not their parent's followed by their slug (`follows` decides that, by default as its name
 * says; a caller may remember the answer per page). None (`anchors` is `undefined`) once a page
 * shows no URL at all (a listing read without it) or there are more than {@link MAX_ANCHORS}.
 */
export class AnchorLearner<P extends UrlPlace & { readonly htmlUrl: string | null | undefined }> {
  readonly #urlOf = new Map<number, string | null>()
  #anchors: Map<number, string | null> | undefined = new Map()

  constructor(private readonly follows: (page: WithUrl<P>, parentUrl: string | null) => boolean = followsParent) {}

  /** False once the tree has no anchors to derive from: the pages after need not be added. */
  add(page: P): boolean {
    const anchors = this.#anchors
    if (anchors === undefined) return false
    const url = page.htmlUrl
    if (url === undefined) return this.#giveUp()
    this.#urlOf.set(page.id, url)
    const parentUrl = page.parentId === null ? undefined : this.#urlOf.get(page.parentId)
    if (parentUrl !== undefined && this.follows(page as WithUrl<P>, parentUrl)) return true
    anchors.set(page.id, url)
    return anchors.size > MAX_ANCHORS ? this.#giveUp() : true
  }

  get anchors(): Map<number, string | null> | undefined {
    return this.#anchors
  }

  #giveUp(): false {
    this.#anchors = undefined
    return false
  }
}

/** {@link AnchorLearner} over a whole tree. */
export function learnAnchors<P extends UrlPlace & { readonly htmlUrl: string | null | undefined }>(
  pages: Iterable<P>,
  follows?: (page: WithUrl<P>, parentUrl: string | null) => boolean,
): Map<number, string | null> | undefined {
  const learner = new AnchorLearner<P>(follows)
  for (const page of pages) if (!learner.add(page)) break
  return learner.anchors
}
