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
  /** `html_url` on the site (spec §5.3: root_url + url path, trailing slash). */
  readonly htmlUrl: string
  readonly detailUrl: string
  /** `first_published_at` as µs since epoch, for ordering and filtering. */
  readonly publishedMicros: number | null
}

export interface SiteIndex {
  readonly root: PageNode | undefined
  /** Every page reachable from the site root (live or not). Unreachable pages are not on the site. */
  readonly byId: ReadonlyMap<number, PageNode>
  /** Live pages in tree order (Wagtail's default listing order, spec §3). */
  readonly visible: readonly PageNode[]
  /** Id → position in `visible`. */
  readonly visiblePosition: ReadonlyMap<number, number>
}

export interface SiteUrls {
  /** Site root_url without trailing slash, e.g. `http://localhost`. */
  readonly siteUrl: string
  /** Base of `detail_url`s: scheme+netloc of WAGTAILAPI_BASE_URL, else the site root_url (spec §5.3). */
  readonly detailBase: string
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

/** Django's `reverse()` quoting of a URL path (RFC 3986 sub-delims and `/~:@` stay raw). */
function quotePath(path: string): string {
  return encodeURIComponent(path).replace(/%(24|26|2B|2C|3B|3D|2F|3A|40)/g, (escaped) =>
    decodeURIComponent(escaped),
  )
}

export function buildSiteIndex(pages: readonly FakePage[], models: PageModelRegistry, urls: SiteUrls): SiteIndex {
  const childrenOf = new Map<number, FakePage[]>()
  let rootPage: FakePage | undefined
  for (const page of pages) {
    if (page.parentId === null) {
      rootPage ??= page
      continue
    }
    let siblings = childrenOf.get(page.parentId)
    if (!siblings) childrenOf.set(page.parentId, (siblings = []))
    siblings.push(page)
  }

  const byId = new Map<number, PageNode>()
  const ordered: PageNode[] = []
  if (rootPage) {
    const makeNode = (page: FakePage, parent: PageNode | null, urlPath: string): PageNode => ({
      page,
      id: page.id,
      model: models.ofPage(page),
      parent,
      children: [],
      live: page.live !== false,
      pre: 0,
      end: 0,
      htmlUrl: urls.siteUrl + quotePath(urlPath),
      detailUrl: `${urls.detailBase}/api/v1/cms/pages/${page.id}/`,
      publishedMicros: timestampMicros(page.firstPublishedAt),
    })
    // Iterative depth-first pre-order: deep trees must not overflow the call stack.
    const stack: Array<{ node: PageNode; path: string }> = [{ node: makeNode(rootPage, null, '/'), path: '/' }]
    while (stack.length > 0) {
      const { node, path } = stack.pop() as { node: PageNode; path: string }
      if (byId.has(node.id)) continue // a cycle or duplicate id: keep the first occurrence
      node.pre = ordered.length
      ordered.push(node)
      byId.set(node.id, node)
      const kids = childrenOf.get(node.id) ?? []
      const childEntries = kids.map((page) => {
        const childPath = `${path}${page.slug}/`
        const child = makeNode(page, node, childPath)
        node.children.push(child)
        return { node: child, path: childPath }
      })
      for (let i = childEntries.length - 1; i >= 0; i--) stack.push(childEntries[i] as { node: PageNode; path: string })
    }
    // Subtree sizes bottom-up (reverse pre-order visits children before parents).
    const size = new Array<number>(ordered.length).fill(1)
    for (let i = ordered.length - 1; i > 0; i--) {
      const node = ordered[i] as PageNode
      if (node.parent) size[node.parent.pre] = (size[node.parent.pre] as number) + (size[i] as number)
    }
    for (const node of ordered) node.end = node.pre + (size[node.pre] as number)
  }

  const visible = ordered.filter((node) => node.live)
  const visiblePosition = new Map<number, number>()
  visible.forEach((node, i) => visiblePosition.set(node.id, i))
  return { root: ordered[0], byId, visible, visiblePosition }
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
