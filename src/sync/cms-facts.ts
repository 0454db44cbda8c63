/**
 * What the sync has learned about the CMS itself (`probe-dialect.ts`, `listing-fields.ts`): its
 * largest page size, whether its listing takes the extra meta fields, and its dialect. Each is
 * asked once and remembered as soon as it is known, whether or not the sync that asked succeeds:
 * the answer is no less true, and asking again would cost the CMS requests for nothing.
 * @module
 */
import type { SyncedPage } from '../tree/build-snapshot.js'
import type { DateKind, DateOrders, Dialect } from '../tree/snapshot.js'
import { dateCandidates, dateOrdersOf, probeDateOrder } from './date-orders.js'
import { probeListingFields, type ListingExtras } from './listing-fields.js'
import { probeBareListing } from './probe-bare-listing.js'
import { probeDialect, probeLimitMax } from './probe-dialect.js'
import type { UpstreamGet } from './upstream-port.js'

export interface CmsFacts {
  /**
   * The page size a sync reads with: a full sync asks for it again (an operator may change
   * WAGTAILAPI_LIMIT_MAX); an incremental one reuses the dialect's.
   */
  pageSize(full: boolean, signal: AbortSignal): Promise<number | null>
  /** Asks the CMS for its page size again (it refused the one in use). */
  probePageSize(signal: AbortSignal): Promise<number | null>
  /** What the listing pass asks for beyond its defaults; `undefined`: nothing (the CMS refused it). */
  listingFields(signal: AbortSignal): Promise<ListingExtras | undefined>
  /**
   * Whether a walk reads the listing without `html_url` and derives it (`walk-without-urls.ts`):
   * asked of the CMS once (`probeBareListing`); never when SYNC_DERIVE_URLS is off.
   */
  derivesUrls(extras: ListingExtras | undefined, signal: AbortSignal): Promise<boolean>
  /** The dialect with this page size; the other answers are probed once per process. */
  dialect(rootId: number, limitMax: number | null, signal: AbortSignal): Promise<Dialect>
  /**
   * Each page type's own date fields the CMS orders by (`date-orders.ts`): the types of `pages`
   * not asked about yet are asked about now; a full sync asks about every type again.
   */
  dateOrders(pages: Iterable<SyncedPage>, full: boolean, signal: AbortSignal): Promise<DateOrders | undefined>
  /** A snapshot from storage or another instance brings the dialect it was synced with. */
  adopt(dialect: Dialect): void
}

export function createCmsFacts(get: UpstreamGet, pagesPath: string, deriveUrls = false): CmsFacts {
  let dialect: Dialect | undefined
  let bare: boolean | undefined
  let extras: { readonly value: ListingExtras | undefined } | undefined
  /** Types asked about, with the fields the CMS orders them by. */
  let dates = new Map<string, Map<string, DateKind>>()
  const probePageSize = (signal: AbortSignal) => probeLimitMax(get, pagesPath, signal)
  return {
    pageSize: (full, signal) => (full || dialect === undefined ? probePageSize(signal) : Promise.resolve(dialect.limitMax)),
    probePageSize,
    async listingFields(signal) {
      extras ??= { value: await probeListingFields(get, pagesPath, signal) }
      return extras.value
    },
    async derivesUrls(extras, signal) {
      if (!deriveUrls) return false
      // An empty listing shows nothing to compare: asked again at the next sync.
      bare ??= await probeBareListing(get, pagesPath, extras, signal)
      return bare === true
    },
    async dialect(rootId, limitMax, signal) {
      if (dialect === undefined) dialect = { limitMax, ...(await probeDialect(get, pagesPath, rootId, signal)) }
      else if (dialect.limitMax !== limitMax) dialect = { ...dialect, limitMax }
      return dialect
    },
    async dateOrders(pages, full, signal) {
      if (full) dates = new Map()
      for (const [type, candidates] of dateCandidates(pages, (each) => !dates.has(each))) {
        const fields = new Map<string, DateKind>()
        let decided = true
        for (const [field, kind] of candidates) {
          const orders = await probeDateOrder(get, pagesPath, type, field, signal)
          if (orders === true) fields.set(field, kind)
          decided &&= orders !== undefined
        }
        // An answer that said nothing (a 429, a 503) is asked again at the next sync.
        if (decided) dates.set(type, fields)
      }
      return dateOrdersOf(dates)
    },
    adopt(adopted) {
      dialect = adopted
      for (const [type, fields] of Object.entries(adopted.dateOrders ?? {})) dates.set(type, new Map(Object.entries(fields)))
    },
  }
}
