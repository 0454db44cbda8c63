/**
 * Shapes shared by the verifier's modules: what is sent, what came back, and what the comparison
 * made of it.
 * @module
 */

export type View = 'listing' | 'detail' | 'find'
export type Method = 'GET' | 'HEAD' | 'OPTIONS'

/** One request of the corpus; `target` is the raw path and query, already percent-encoded. */
export interface VerifyRequest {
  readonly n: number
  readonly method: Method
  readonly view: View
  readonly target: string
  /** Absent: no Accept header at all. */
  readonly accept?: string
  /** What the generator meant to exercise, for grouping the report. */
  readonly kind: string
  /** One of the router's other endpoints (`images`, `documents`); absent: the pages endpoint. */
  readonly endpoint?: string
}

/** A request as a generator writes it, before it is numbered (GET unless said). */
export type RequestDraft = Omit<VerifyRequest, 'n' | 'method'> & { readonly method?: Method }

export interface Answer {
  readonly status: number
  /** Lower-cased names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
}

/** An answer, or why there was none (timeout, refused connection, …). */
export type Exchange = { readonly ok: true; readonly answer: Answer } | { readonly ok: false; readonly error: string }

export type Outcome =
  /** The same after the documented rewrites (detail_url base, Vary without Cookie). */
  | 'identical'
  /** Different in a way docs/wagtail-compatibility.md#deliberate-differences lists. */
  | 'documented'
  | 'differ'
  /** The shield's read-through budget refused (429/503 with Retry-After): nothing to compare. */
  | 'over-budget'
  /** One side gave no answer. */
  | 'failed'

export interface Verdict {
  readonly outcome: Outcome
  /** Human-readable lines: the first differing header or JSON path, or the documented reason. */
  readonly notes: readonly string[]
  /** A short key to group like differences in the report (`status`, `header vary`, `body $.meta`). */
  readonly group?: string
}

/** Where the two sides put their API links: `detail_url` and `Location` are rewritten from one to the other. */
export interface Bases {
  readonly cms: string
  readonly shield: string
}

export interface Result {
  readonly request: VerifyRequest
  readonly verdict: Verdict
  readonly cms: Exchange
  readonly shield: Exchange
}

/** A page as discovery saw it in the CMS's listing. */
export interface SitePage {
  readonly id: number
  readonly type: string
  readonly title: string
  readonly slug: string
  /** The path of `html_url` (`/about/team/`), for `find/?html_path=`; null without an html_url. */
  readonly htmlPath: string | null
  readonly firstPublishedAt: string | null
  readonly seoTitle?: string
  readonly searchDescription?: string
  readonly locale?: string
}

/** A page type and what its own serializer offers, from `?type=T&fields=*` and one detail. */
export interface SiteType {
  readonly name: string
  readonly count: number
  /** Field names of `fields=*` in the listing (top level, `meta` members included). */
  readonly fields: readonly string[]
  /** `[name, value]` of the detail's short scalar fields: candidates for `?type=T&name=value`. */
  readonly filters: readonly (readonly [string, string])[]
  /** Object-valued fields and their keys, for `fields=name(key)`. */
  readonly nested: readonly (readonly [string, readonly string[]])[]
  /** Its own fields whose values read as dates or instants, with every page's value: candidates for `order=`. */
  readonly dates?: readonly SiteDateField[]
}

/** One of a type's own date fields, as the type's listing showed it for each of its pages. */
export interface SiteDateField {
  readonly name: string
  /** `[page id, value]`; `null` where the page has none. */
  readonly values: readonly (readonly [number, string | null])[]
}

/** What the corpus is built from; everything in it came from the CMS. */
export interface SiteModel {
  /** The CMS's largest page size, or null when it has none. */
  readonly limitMax: number | null
  readonly totalCount: number
  readonly pages: readonly SitePage[]
  readonly types: readonly SiteType[]
  /** `host` and `host:port` of the sites the pages' html_urls name. */
  readonly hosts: readonly string[]
  readonly locales: readonly string[]
  /** The router's other endpoints asked for (`--endpoints`), as their listings showed them; absent or empty: none. */
  readonly media?: readonly SiteEndpoint[]
}

/** One of the router's other endpoints (`images`, `documents`), from its own listing. */
export interface SiteEndpoint {
  readonly name: string
  readonly totalCount: number
  readonly ids: readonly number[]
  readonly titles: readonly string[]
  /** Every tag its items carry (`meta.tags`), sorted. */
  readonly tags: readonly string[]
}

/** Where the CMS's API router is mounted (`--api-path`) and its pages endpoint below it (`--pages-endpoint`). */
export interface ApiPaths {
  /** `/api/v2/`: starts and ends with `/`. */
  readonly api: string
  /** `<api><pages endpoint>/`: `/api/v2/pages/`. */
  readonly pages: string
}
