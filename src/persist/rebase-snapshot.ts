/**
 * A stored snapshot made by an instance with another BASE_URL, made servable here: every
 * `detail_url` in its bodies is pointed at this instance's BASE_URL, and nothing else changes.
 *
 * Instances with different BASE_URLs (a rolling deploy that changes it, or one cluster serving
 * two public names) share one Redis and one syncing instance, so the CMS is still synced once;
 * each rewrites the shared snapshot on load. Each page keeps the digest of the bytes the syncing
 * instance stored, so the rebuilt snapshot's fingerprint is the stored one: instances agree on
 * which snapshot they serve whatever their BASE_URL (docs/architecture.md, "Sync, bytes and index in brief").
 *
 * Listing items are rewritten at once: the tree is indexed from them. A detail body is rewritten
 * when it is first read, like a stored detail is decompressed (`details-part.ts`): rewriting every
 * body on load cost a large tree many seconds of CPU and as much memory again, for bodies most of
 * which nobody reads before the next load (docs/performance.md, "A snapshot from another
 * BASE_URL").
 * @module
 */
import { createUrlRewriter, rewriteDetailUrls, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import { bytesOf, type DeferredBody, type DetailBody } from '../tree/detail-body.js'
import { pageDigest, type SyncedPage } from '../tree/build-snapshot.js'

/** The config strips trailing slashes; doing it here too keeps `https://x/` equal to `https://x`. */
export function sameBaseUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '')
}

/** A detail body rewritten on first read; its length, too, is known only then. */
class RebasedBody implements DeferredBody {
  private made: Buffer | undefined = undefined
  private source: DetailBody | string | undefined

  constructor(source: DetailBody | string, private readonly rewrite: RewriteUrl) {
    this.source = source
  }

  get length(): number {
    return this.bytes().length
  }

  bytes(): Buffer {
    if (this.made !== undefined) return this.made
    const source = this.source!
    const text = typeof source === 'string' ? source : bytesOf(source).toString('utf8')
    this.made = Buffer.from(rewriteDetailUrls(text, this.rewrite).text, 'utf8')
    this.source = undefined
    return this.made
  }

  toString(encoding?: BufferEncoding): string {
    return this.bytes().toString(encoding)
  }
}

function rebasePage(page: SyncedPage, rewrite: RewriteUrl): SyncedPage {
  const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
  const moved = (text: string) => rewriteDetailUrls(text, rewrite).text
  // By name: a stored page's items are accessors, which a spread would not copy (`stored-page.ts`).
  const { id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId, typedListItem } = page
  return {
    id, type, title, slug, showInMenus, seoTitle, searchDescription, parentId,
    listItem: moved(page.listItem),
    detail: new RebasedBody(page.detail, rewrite),
    ...(typedListItem === undefined ? {} : { typedListItem: moved(typedListItem) }),
    digest,
  }
}

/**
 * @param from the BASE_URL the pages' `detail_url`s point at now
 * @param to this instance's BASE_URL
 */
export function rebasePages(pages: SyncedPage[], from: string, to: string): SyncedPage[] {
  if (sameBaseUrl(from, to)) return pages
  // URLs under the old base's path (`https://old.example/prefix/api/v1/cms/pages/…`) move to the new base.
  const rewrite = createUrlRewriter({ baseUrl: to, upstreamPathPrefix: new URL(from).pathname })
  return pages.map((page) => rebasePage(page, rewrite))
}
