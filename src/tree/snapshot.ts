/**
 * The immutable snapshot of the CMS's page tree that every index-served answer is read from.
 *
 * A snapshot is built once per sync (see `build-snapshot.ts`) and swapped in atomically; nothing
 * mutates it afterwards, so a request that holds a reference sees one consistent moment of the CMS.
 * @module
 */
import type { DetailBody } from './detail-body.js'
import type { PageList } from './page-list.js'
import type { Lookup } from './patched-map.js'
import type { TranslationGroups } from './translations.js'

/** What the CMS taught us about itself at sync time (docs/wagtail-compatibility.md#dialect-probes: answers that differ by version). */
export interface Dialect {
  /** `WAGTAILAPI_LIMIT_MAX`: the largest `limit` the CMS accepts, or `null` when it has none. */
  readonly limitMax: number | null
  /** Wagtail 5.2+ ignores `type=` (empty); 4.1–5.1 answer 400 "type doesn't exist". */
  readonly emptyTypeIgnored: boolean
  /** Wagtail 7.1+ keeps the other query parameters on find's redirect and always appends `?`. */
  readonly findKeepsQuery: boolean
  /**
   * A NUL in a text field filter (`title=a%00`): Wagtail 6.2+ refuses it with a 400; older ones
   * pass it to the database, where SQLite matches nothing (`matches-nothing`) and PostgreSQL
   * fails (cms-shield answers the 400 then: never a 5xx). Absent in snapshots stored before it
   * was learned: read as `refused`.
   */
  readonly nulInTextFilter: 'refused' | 'matches-nothing'
  /**
   * DRF's 406 text, in the CMS's language (`LANGUAGE_CODE`: a German site says "Kann die Accept
   * Kopfzeile der Anfrage nicht erfüllen."). Absent in snapshots stored before it was learned: read
   * as the English text.
   */
  readonly notAcceptableText: string
  /**
   * With WAGTAIL_I18N_ENABLED off, listings and details leave `locale` out, but `fields=*` and
   * `fields=locale` show it: the language code every page of the tree has, read by the listing
   * pass (`listing-fields.ts`). Absent when the listing shows `locale` itself, when pages differ
   * in it, or when the CMS did not say: such fields are then answered by the CMS.
   */
  readonly unlistedLocale?: string
  /**
   * A page type's own date fields that OrderingFilter takes (database columns among its API
   * fields, probed at sync), by type and field: how their values read in the stored details.
   * Absent or without a type: that type's own orders are answered by the CMS.
   */
  readonly dateOrders?: DateOrders
}

/** How a date field's value reads: a `DateField`'s `YYYY-MM-DD`, or a `DateTimeField`'s aware ISO instant. */
export type DateKind = 'date' | 'datetime'

/** `Dialect.dateOrders`: page type → field → kind. */
export type DateOrders = Readonly<Record<string, Readonly<Record<string, DateKind>>>>

/** The fields of one page the index filters and places it by: as synced, and as kept. */
export interface PageFields {
  readonly id: number
  /** `app_label.ModelName`, exactly as the CMS writes it in `meta.type`. */
  readonly type: string
  readonly title: string
  readonly slug: string
  readonly showInMenus: boolean
  readonly seoTitle: string
  readonly searchDescription: string
  /** The parent's id, or `null` for the site root (and for a page whose parent is not visible). */
  readonly parentId: number | null
}

/** One page as the index needs it, with its pre-rendered bytes. */
export interface PageRecord extends PageFields {
  /** Position in tree order (the CMS's default listing order), 0-based. */
  readonly order: number
  /** Exclusive end of this page's subtree in tree order: descendants are `pages[order + 1 .. subtreeEnd)`. */
  readonly subtreeEnd: number
  /** The CMS's own listing item, `detail_url`s rewritten, formatted for depth 2 of a list envelope. */
  readonly listItem: string
  /**
   * The item as a listing filtered to exactly this page's type shows it, where that differs:
   * such a listing serialises the specific model, whose `html_url` may differ (a RedirectPage's
   * external address). `undefined` when it is the same as `listItem`.
   */
  readonly typedListItem: string | undefined
  /** The CMS's own detail body, `detail_url`s rewritten; read it with `bytesOf` (`detail-body.ts`). */
  readonly detail: DetailBody
  /** A digest of `listItem`, `typedListItem` and `detail`: what changed between two snapshots. */
  readonly digest: string
}

export interface Snapshot {
  /** Increases by one with every swap; part of every rendered-list cache key. */
  readonly version: number
  /** When the sync that produced it finished (ms since epoch, from the injected clock). */
  readonly syncedAt: number
  /** When every detail was last fetched (a full sync); incremental syncs carry it over. */
  readonly fullSyncedAt: number
  /** A digest of every rendered byte: equal fingerprints mean nothing a client can see changed. */
  readonly fingerprint: string
  /**
   * The fingerprint's first level: one digest per block of pages in tree order, which the
   * fingerprint hashes in turn. A patch rehashes the blocks it touched, not every page.
   */
  readonly fingerprintBlocks: readonly string[]
  /**
   * Set on a snapshot made by replacing pages in place (`patchSnapshot`): the fingerprint of the
   * snapshot it patched and the ids it replaced, so comparing the two costs what changed. Only
   * the fingerprint is kept, never the snapshot itself, so no snapshot holds its predecessors.
   */
  readonly patched?: { readonly from: string; readonly ids: readonly number[] }
  /** Every visible page, in tree order: a frozen array, or after a patch the previous one's with the replaced records over it. */
  readonly pages: PageList
  /** A `Map`, or after a patch the previous snapshot's map with the replaced records over it. */
  readonly byId: Lookup<number, PageRecord>
  /** Direct children of each page, in tree order (absent key = no children). */
  readonly childrenOf: Lookup<number, readonly PageRecord[]>
  /** The site root: the first page in tree order; its parent is `null`. */
  readonly rootId: number
  /** Slug path below the site root (`"a/b"`; the root itself is `""`) → page id, for `find/?html_path=`. */
  readonly byPath: ReadonlyMap<string, number>
  /** Lower-cased `app_label.modelname` → the canonical type name seen in the tree. */
  readonly types: ReadonlyMap<string, string>
  /**
   * True when parent links alone describe the tree exactly: one root, and the listing order is a
   * pre-order walk of the parent links. When false (a live page under an unpublished parent makes
   * an orphan whose path we cannot see), `descendant_of` and `ancestor_of` are read through.
   */
  readonly treeExact: boolean
  readonly dialect: Dialect
  /**
   * Which pages translate which, learned from the CMS (`sync/learn-translations.ts`); `undefined`
   * when not learned (a Site in fewer than two languages needs none: `translationsOf`).
   */
  readonly translations?: TranslationGroups
}
