/**
 * A stored snapshot made by an instance with another BASE_URL, made servable here: every
 * `detail_url` in its bodies is pointed at this instance's BASE_URL, and nothing else changes.
 *
 * Instances with different BASE_URLs (a rolling deploy that changes it, or one cluster serving
 * two public names) share one Redis and one syncing instance, so the CMS is still synced once;
 * each rewrites the shared snapshot on load. Each page keeps the digest of the bytes the syncing
 * instance stored, so the rebuilt snapshot's fingerprint is the stored one: instances agree on
 * which snapshot they serve whatever their BASE_URL (README, "Redis and persistence").
 * @module
 */
import { createUrlRewriter, rewriteDetailUrls, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import { pageDigest, type SyncedPage } from '../tree/build-snapshot.js'

/** The config strips trailing slashes; doing it here too keeps `https://x/` equal to `https://x`. */
export function sameBaseUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '')
}

function rebasePage(page: SyncedPage, rewrite: RewriteUrl): SyncedPage {
  const digest = page.digest ?? pageDigest(page.listItem, page.typedListItem, page.detail)
  const moved = (text: string) => rewriteDetailUrls(text, rewrite).text
  return {
    ...page,
    listItem: moved(page.listItem),
    detail: moved(typeof page.detail === 'string' ? page.detail : page.detail.toString('utf8')),
    ...(page.typedListItem === undefined ? {} : { typedListItem: moved(page.typedListItem) }),
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
