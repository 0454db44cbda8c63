/**
 * Public types of the fake Wagtail origin used by integration tests, the demo and benchmarks.
 *
 * The fake answers `GET|HEAD|OPTIONS /api/v1/cms/pages/…` the way Wagtail 7.4.3 does (see
 * docs/wagtail-compatibility.md and the probe transcripts in `fixtures/wagtail-probes-7.4.3.txt`), over a tree the test gives it.
 * @module
 */
import type { CostModel } from './cost-model.js'

/** One page of the fake CMS. Sibling order is the order of the pages in the array the fake holds. */
export interface FakePage {
  id: number
  /** `app_label.ModelName`, e.g. `'cms.GenericPage'`. */
  type: string
  title: string
  slug: string
  /** `null` only for the site root. */
  parentId: number | null
  showInMenus: boolean
  seoTitle: string
  searchDescription: string
  /**
   * Already formatted like Wagtail (docs/wagtail-compatibility.md#response-bodies): `'2024-05-06T07:08:09.123456Z'`, `'…Z'` without micros, or
   * with a numeric offset (`'…+02:00'`) for a non-UTC `TIME_ZONE`.
   */
  firstPublishedAt: string | null
  /** Default true; a non-live page is invisible everywhere (like a draft) but its live children stay visible. */
  live?: boolean
  aliasOf?: number | null
  /**
   * `html_url` override for the DETAIL view only (a RedirectPage's detail shows the external address; its
   * untyped listing item shows the on-site address). Also used by a listing filtered to exactly one type,
   * because Wagtail then serialises the specific model (docs/wagtail-compatibility.md#response-bodies).
   */
  detailHtmlUrl?: string
  /** Type-specific detail fields, emitted after title in detail bodies, in insertion order; may hold nested objects. */
  extra?: Record<string, unknown>
  /** Its Locale's language code (default `en`). */
  locale?: string
  /** Pages sharing a key are translations of each other (default: the page's own, `page-<id>`). */
  translationKey?: string
}

/**
 * Behaviour switches that differ by Wagtail version. `5.1` stands for 4.1–6.1 on PostgreSQL (a NUL
 * in a text filter reaches the database and fails with a 500); `4.1` is the same versions on
 * SQLite, where such a filter simply matches nothing.
 */
export type WagtailVersion = '7.4' | '7.0' | '5.1' | '4.1'

/** 4.1–6.1, whatever the database: the answers that do not depend on it. */
export function isLegacyWagtail(version: WagtailVersion): boolean {
  return version === '5.1' || version === '4.1'
}

export interface FakeWagtailOptions {
  pages: FakePage[]
  /** Site `root_url` used in `html_url` and `detail_url`; default `'http://localhost'` — deliberately NOT the server's own address. */
  siteUrl?: string
  /** `WAGTAILAPI_BASE_URL`: if set, `detail_url` uses its scheme+host instead of `siteUrl`. */
  apiBaseUrl?: string
  /** `WAGTAILAPI_LIMIT_MAX`, default 250 (the seed shows `limit=250` accepted); `null` (or 0) = no maximum. */
  limitMax?: number | null
  /** Default `'7.4'`. */
  version?: WagtailVersion
  /** Django's `LANGUAGE_CODE`, the language of DRF's messages (default `'en'`). */
  language?: 'en' | 'de'
  /** Delay before every answer, in milliseconds. */
  latencyMs?: number
  /** Charge worker time for every answer (`cost-model.ts`); none: answers cost nothing. */
  cost?: CostModel
  /** Port to listen on (default 0 = any free port). */
  port?: number
  /**
   * Address to listen on (default `'127.0.0.1'`: tests never expose the fake). `scripts/fake-cms.ts` passes
   * `'0.0.0.0'` so another container can reach it; `url` then still names 127.0.0.1.
   */
  host?: string
  /** Record every request in `requests` (default true; benchmarks may turn it off to save memory). */
  recordRequests?: boolean
  /** Where urls.py mounts the API router; default the seed's `/api/v1/cms/` (Wagtail documents `/api/v2/`). */
  apiPath?: string
  /** The router's `images` and `documents` endpoints, over these items (`media-api.ts`); absent: not registered. */
  media?: FakeMedia
  /**
   * `WAGTAIL_I18N_ENABLED`: `meta.locale` in listings and details. Pages with `parentId: null` after
   * the first are translations of the site root (their trees are listed with it).
   */
  i18n?: boolean
  /** The CMS's Locales (default: `en` and every page's). */
  locales?: string[]
  /**
   * Type-specific API fields that are no database column (an `APIField` on a property or method):
   * shown like the others, but neither filters nor orders (docs/wagtail-compatibility.md#ordering).
   */
  columnless?: string[]
  /**
   * Other Sites, by hostname, each with its own tree (ids apart from `pages`'): a request whose Host
   * names one is answered from it (`Site.find_for_request`), any other Host from `pages`.
   */
  sites?: Record<string, FakePage[]>
}

/** One image or document as Wagtail's models hold it. */
export interface FakeMediaItem {
  id: number
  title: string
  /** The file's path below MEDIA_URL (`original_images/a.png`, `documents/b.pdf`). */
  file: string
  tags?: string[]
  /** Images only. */
  width?: number
  height?: number
}

export interface FakeMedia {
  images: FakeMediaItem[]
  documents: FakeMediaItem[]
}

/** `endpoint`: one of the router's other endpoints (`images`, `documents`). */
export type RequestKind = 'list' | 'detail' | 'find' | 'endpoint' | 'other'

export interface HitCounters {
  total: number
  list: number
  detail: number
  find: number
  endpoint: number
  other: number
}

export interface RecordedRequest {
  method: string
  /** The request target as received (path and query string). */
  url: string
  /** Lower-cased header names, as Node parses them. */
  headers: Record<string, string | string[] | undefined>
  kind: RequestKind
}

export interface FaultContext {
  method: string
  /** The request path without the query string, as received (not percent-decoded). */
  path: string
  query: URLSearchParams
  kind: RequestKind
  /** The page id of a detail request (absent when it is not a safe integer). */
  id?: number
  /** 1-based number of this request among all requests since start (or the last `resetHits()`). */
  hitNumber: number
}

export type Fault =
  /**
   * e.g. a 500 HTML page or a 503; body defaults to Django's 500 page, content type to `text/html; charset=utf-8`.
   * `headers` adds what a server or proxy in front may send: `Retry-After`, a login redirect's `Location`, ….
   */
  | { type: 'status'; status: number; body?: string; contentType?: string; headers?: Readonly<Record<string, string>> }
  /** Never answer; the socket stays open until `close()`. */
  | { type: 'hang' }
  /** Destroy the socket without a response. */
  | { type: 'reset' }
  /** 200, `application/json`, the real body truncated (Content-Length matches the truncated bytes). */
  | { type: 'malformed-json' }
  /** 200 with a `text/html` body. */
  | { type: 'wrong-content-type' }
  /** The real answer, its body written `bytesPerChunk` bytes every `intervalMs`. */
  | { type: 'trickle'; bytesPerChunk: number; intervalMs: number }
  /** 200 `application/json` body of exactly that many bytes (one valid JSON string). */
  | { type: 'oversize'; bytes: number }
  /** Arbitrary JSON answer with the API's headers (tests build duplicate ids, total_count drift, …). */
  | { type: 'json'; status: number; body: unknown }

export interface FakeWagtail {
  /** `'http://127.0.0.1:<port>'`, or the `host` option's address when it names one (not a wildcard). */
  readonly url: string
  /** Live counters (the same object is updated in place). */
  readonly hits: HitCounters
  /** Zeroes the counters and forgets the recorded requests. */
  resetHits(): void
  /** Every request since start (or the last `resetHits()`). */
  readonly requests: RecordedRequest[]
  setLatency(ms: number): void
  /** Starts (or, with `undefined`, stops) charging worker time for answers. */
  setCost(model: CostModel | undefined): void
  /** The cost model in use, if any: its `busy()` is the CMS time spent. */
  readonly cost: CostModel | undefined
  /** Replaces the whole tree. */
  setPages(pages: FakePage[]): void
  updatePage(id: number, patch: Partial<FakePage>): void
  /** Appended to its parent's children unless `after` names a sibling id. */
  addPage(page: FakePage, options?: { after?: number }): void
  /** Removes the page and its subtree. */
  removePage(id: number): void
  /** Re-parents the page (with its subtree) as the last child of `newParentId`. */
  movePage(id: number, newParentId: number): void
  /** Copies of the current pages, in stored (sibling) order. */
  pages(): FakePage[]
  /** Replaces the images and documents (only when started with `media`). */
  setMedia(media: FakeMedia): void
  /** Edits a page of another Site (only when started with `sites`). */
  updateSitePage(hostname: string, id: number, patch: Partial<FakePage>): void
  /** Fault injection: called for every request before it is answered; return a fault to apply, or undefined. */
  setFault(fn: ((req: FaultContext) => Fault | undefined) | undefined): void
  /** Called for every request before the answer is computed (tests mutate the tree mid-sync here). */
  onRequest(fn: ((req: FaultContext) => void) | undefined): void
  /** Stops listening and destroys every open socket (hanging ones included). */
  close(): Promise<void>
}
