/**
 * The derived, read-only view of the page tree every request is answered from: tree order, visibility,
 * URLs. Rebuilt (O(n)) after a mutation, on the next request.
 * @module
 */
import type { PageModel, PageModelRegistry } from './page-models.js'
import type { FakePage } from './types.js'

export interface PageNode {
  readonly page: FakePage
  readonly id: number
  readonly model: PageModel
  /** Structural parent (may be non-live); `null` for the site root. */
  readonly parent: PageNode | null
  /** All children, live or not, in sibling order. */
  readonly children: PageNode[]
  readonly live: boolean
  /** Position in depth-first pre-order over the whole site (live or not). */
  pre: number
  /** Exclusive end of this node's subtree in pre-order: descendants have `pre < d.pre < end`. */
  end: number
  /** `html_url` on the site (docs/wagtail-compatibility.md#response-bodies: root_url + url path, trailing slash). */
  readonly htmlUrl: string
  readonly detailUrl: string
  /** Slug path below the site root, with slashes: `/` for the root, `/a/b/` below. */
  readonly urlPath: string
  /** `first_published_at` as µs since epoch, for ordering and filtering. */
  readonly publishedMicros: number | null
}

export interface SiteIndex {
  readonly root: PageNode | undefined
  /** Every page reachable from the site root (live or not). Unreachable pages are not on the site. */
  readonly byId: ReadonlyMap<number, PageNode>
  /** Live pages in tree order (Wagtail's default listing order, docs/wagtail-compatibility.md#pagination-and-default-order). */
  readonly visible: readonly PageNode[]
  /** Id → position in `visible`. */
  readonly visiblePosition: ReadonlyMap<number, number>
}

export interface SiteUrls {
  /** Site root_url without trailing slash, e.g. `http://localhost`. */
  readonly siteUrl: string
  /** Base of `detail_url`s: scheme+netloc of WAGTAILAPI_BASE_URL, else the site root_url (docs/wagtail-compatibility.md#response-bodies). */
  readonly detailBase: string
  /** Where the API router is mounted (`/api/v1/cms/`). */
  readonly apiPath: string
}

/** Parses a Wagtail timestamp (`…Z`, optional fraction) to µs since epoch. */
export function timestampMicros(text: string | null): number | null {
  if (text === null) return null
  const match = /^(.*?)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)?$/.exec(text)
  if (!match) return null
  const ms = Date.parse(`${match[1]}${match[3] ?? 'Z'}`)
  if (Number.isNaN(ms)) return null
  return ms * 1000 + Number((match[2] ?? '').padEnd(6, '0'))
}

const SAFE_PATH = /^[A-Za-z0-9\-._~/]*$/

/** Django's `reverse()` quoting of a URL path (RFC 3986 sub-delims and `/~:@` stay raw). */
function quotePath(path: string): string {
  if (SAFE_PATH.test(path)) return path
  return encodeURIComponent(path).replace(/%(24|26|2B|2C|3B|3D|2F|3A|40)/g, (escaped) =>
    decodeURIComponent(escaped),
  )
}

export function buildSiteIndex(pages: readonly FakePage[], models: PageModelRegistry, urls: SiteUrls): SiteIndex {
  const childrenOf = new Map<number, FakePage[]>()
  // The site root, then (with translations) its translations: each listed with its subtree.
  const rootPages: FakePage[] = []
  for (const page of pages) {
    if (page.parentId === null) {
      rootPages.push(page)
      continue
    }
    const siblings = childrenOf.get(page.parentId)
    if (siblings) siblings.push(page)
    else childrenOf.set(page.parentId, [page])
  }

  const byId = new Map<number, PageNode>()
  const ordered: PageNode[] = []
  for (const [position, rootPage] of rootPages.entries()) {
    // A translated root is served under its language's prefix (i18n_patterns).
    const rootPath = position === 0 ? '/' : `/${rootPage.locale ?? 'en'}/`
    // Iterative depth-first pre-order: deep trees must not overflow the call stack.
    const stack: PageNode[] = [new PageNodeImpl(rootPage, null, rootPath, models, urls)]
    while (stack.length > 0) {
      const node = stack.pop() as PageNodeImpl
      if (byId.has(node.id)) continue // duplicate id: keep the first occurrence
      node.pre = ordered.length
      ordered.push(node)
      byId.set(node.id, node)
      const kids = childrenOf.get(node.id)
      if (!kids) continue
      for (const page of kids) node.children.push(new PageNodeImpl(page, node, `${node.urlPath}${page.slug}/`, models, urls))
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as PageNode)
    }
  }
  // Subtree sizes bottom-up (reverse pre-order visits children before parents).
  const size = new Array<number>(ordered.length).fill(1)
  for (let i = ordered.length - 1; i > 0; i--) {
    const node = ordered[i] as PageNode
    if (node.parent) size[node.parent.pre] = (size[node.parent.pre] as number) + (size[i] as number)
  }
  for (const node of ordered) node.end = node.pre + (size[node.pre] as number)

  const visible = ordered.filter((node) => node.live)
  const visiblePosition = new Map<number, number>()
  visible.forEach((node, i) => visiblePosition.set(node.id, i))
  return { root: ordered[0], byId, visible, visiblePosition }
}

class PageNodeImpl implements PageNode {
  readonly id: number
  readonly model: PageModel
  readonly children: PageNode[] = []
  readonly live: boolean
  pre = 0
  end = 0
  // Derived strings are built on first use: a listing serialises 250 of 100,000 pages.
  private html: string | undefined
  private detail: string | undefined
  private micros: number | null | undefined

  constructor(
    // Writable here only for `replacePageInPlace`; readers see `PageNode.page` read-only.
    public page: FakePage,
    readonly parent: PageNode | null,
    readonly urlPath: string,
    models: PageModelRegistry,
    private readonly urls: SiteUrls,
  ) {
    this.id = page.id
    this.model = models.ofPage(page)
    this.live = page.live !== false
  }

  get htmlUrl(): string {
    this.html ??= this.urls.siteUrl + quotePath(this.urlPath)
    return this.html
  }

  get detailUrl(): string {
    this.detail ??= `${this.urls.detailBase}${this.urls.apiPath}pages/${this.id}/`
    return this.detail
  }

  /** Parsed on first use: only ordering and filtering need it. */
  get publishedMicros(): number | null {
    if (this.micros === undefined) this.micros = timestampMicros(this.page.firstPublishedAt)
    return this.micros
  }
}

/**
 * Fields whose change leaves the index as it is: the tree's shape and order, visibility, URLs,
 * models and publication dates do not depend on them.
 */
const IN_PLACE_FIELDS: ReadonlySet<string> = new Set(['title', 'showInMenus', 'seoTitle', 'searchDescription'])

/**
 * Puts `page` (an edit of `changed` fields) into `index` in place of its earlier version, when
 * nothing the index derives depends on those fields; false when the index must be rebuilt. A
 * retitle at 100,000 pages would otherwise cost a rebuild (~100 ms) before the next answer.
 * Children keep reading their parent through the same node, so they see the new title too.
 */
export function replacePageInPlace(index: SiteIndex, page: FakePage, changed: readonly string[]): boolean {
  if (!changed.every((field) => IN_PLACE_FIELDS.has(field))) return false
  const node = index.byId.get(page.id)
  if (!(node instanceof PageNodeImpl)) return false
  node.page = page
  return true
}

/** Live descendants of `node` in tree order (a contiguous run of `visible`). */
export function visibleDescendants(index: SiteIndex, node: PageNode): readonly PageNode[] {
  const { visible } = index
  return visible.slice(firstAfter(visible, node.pre), firstAfter(visible, node.end - 1))
}

/** Index of the first node in `nodes` (sorted by `pre`) whose `pre` is greater than `pre`. */
function firstAfter(nodes: readonly PageNode[], pre: number): number {
  let lo = 0
  let hi = nodes.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((nodes[mid] as PageNode).pre <= pre) lo = mid + 1
    else hi = mid
  }
  return lo
}
