/**
 * The vocabulary of surrogate keys (Fastly and Varnish `Surrogate-Key`, Cloudflare `Cache-Tag`):
 * each key names one *input* that answers are made of, so a CDN in front of cms-shield can be
 * purged by what changed and nothing else (docs/cdn-purging.md#the-keys).
 *
 * Wagtail purges only a published page's URL and its API detail URL
 * (docs/wagtail-compatibility.md#what-wagtail-purges). Here `answer-keys.ts` gives every answer
 * the keys of exactly the inputs its bytes are made of, and `change-keys.ts` turns the difference
 * between two snapshots into the keys of the inputs that changed.
 *
 * Keys (lower-case tokens without spaces or commas; `<S>` is a list scope: `children-<id>`,
 * `descendants-<id>`, or `list` for a list without one tree filter):
 * - `cms-pages`: every answer (purge everything);
 * - `cms-page-<id>`: the detail of one page, and the 404 for that id while it has none;
 * - `cms-summary-<id>`: the page as its children's details show it (`meta.parent`: type, title);
 * - `cms-path-<id>`: the page's place (its parent, its `html_url`); every answer that shows the
 *   address of the page or of a page below it, or lists the chain above one, carries it;
 * - `cms-exists-<id>`: that the page is there at all (a list showing no item of its scope);
 * - `cms-ancestors-<id>`: which page the page hangs from (what its `ancestor_of` list holds);
 * - `cms-item-<id>`: the page's listing item (the listing's default fields);
 * - `cms-meta-<id>`: what `?fields=` may show of it in a listing from its stored detail's `id`,
 *   `title` and `meta` (`meta.parent` aside);
 * - `cms-fields-<id>`: the same from the stored detail's other fields (its page type's own);
 * - `cms-<S>`: which pages a scope holds, in which order, of which types (membership);
 * - `cms-<S>-type-<app.model>`, `cms-<S>-menus-<true|false>`: the same, of the pages of one type
 *   or one `show_in_menus` value only (the membership of a list filtered by it);
 * - `cms-<S>-<field>`: the values of one field a list filters or orders on, over the scope;
 * - `cms-<S>-items`: every item of the scope, for a list too long to name its items one by one;
 * - `cms-read`: every answer read through from the CMS (search, text order…);
 * - `cms-endpoint-<name>`: every answer of one of the router's other endpoints (`images`, …).
 * @module
 */

export const ALL_PAGES_KEY = 'cms-pages'
export const READ_KEY = 'cms-read'
export const pageKey = (id: number): string => `cms-page-${id}`
export const summaryKey = (id: number): string => `cms-summary-${id}`
export const pathKey = (id: number): string => `cms-path-${id}`
export const existsKey = (id: number): string => `cms-exists-${id}`
export const ancestorsKey = (id: number): string => `cms-ancestors-${id}`
export const itemKey = (id: number): string => `cms-item-${id}`
export const metaKey = (id: number): string => `cms-meta-${id}`
export const fieldsKey = (id: number): string => `cms-fields-${id}`
export const endpointKey = (name: string): string => `cms-endpoint-${name.toLowerCase()}`

/** A list's scope as keys name it: the children or descendants of a page, or the whole tree. */
export type KeyScope = { readonly kind: 'children' | 'descendants'; readonly id: number } | { readonly kind: 'list' }

/** The fields a list filters or orders on that an edit can change (`id` never does; `type` is membership). */
export const FILTER_FIELDS = ['title', 'slug', 'seo_title', 'search_description', 'show_in_menus', 'locale', 'first_published_at'] as const
export type FilterField = (typeof FILTER_FIELDS)[number]

const scopeText = (scope: KeyScope): string => (scope.kind === 'list' ? 'list' : `${scope.kind}-${scope.id}`)
/** What a list's membership is narrowed to: a type's pages, or a `show_in_menus` value's. */
export type Narrowing = { readonly type: string } | { readonly menus: boolean } | undefined

const narrowingText = (narrowing: Narrowing): string =>
  narrowing === undefined ? '' : 'type' in narrowing ? `-type-${narrowing.type.toLowerCase()}` : `-menus-${narrowing.menus}`
/**
 * The longest key: a purge request names many (`src/cdn/varnish-target.ts`), so each stays short.
 * The longest fixed ones are `cms-descendants-<ten digits>-search_description`, 45 bytes.
 */
export const MAX_KEY_LENGTH = 60

/** Narrowed to a type whose name would pass {@link MAX_KEY_LENGTH}: the whole scope's key, which every change of membership purges too. */
export function membershipKey(scope: KeyScope, narrowing?: Narrowing): string {
  const narrowed = `cms-${scopeText(scope)}${narrowingText(narrowing)}`
  return narrowed.length <= MAX_KEY_LENGTH ? narrowed : `cms-${scopeText(scope)}`
}
export const fieldKey = (scope: KeyScope, field: FilterField): string => `cms-${scopeText(scope)}-${field}`
export const itemsKey = (scope: KeyScope): string => `cms-${scopeText(scope)}-items`
export const LIST_SCOPE: KeyScope = Object.freeze({ kind: 'list' })

/**
 * The most a key header's value may take, in bytes. Varnish refuses a response header longer than
 * `http_resp_hdr_len` (8 KB by default, name included) and fails the fetch; Fastly reads at most
 * 16 KB of `Surrogate-Key`; Cloudflare at most 16 KB of `Cache-Tag`. Half of Varnish's limit
 * leaves room for the header's name and for a proxy's own additions.
 */
export const KEY_HEADER_MAX_BYTES = 4096

/** The length of `keys` written as one header value (one separator between two keys). */
export function headerLength(keys: readonly string[]): number {
  let length = Math.max(0, keys.length - 1)
  for (const key of keys) length += key.length
  return length
}

/**
 * The two header values for a set of keys: `Surrogate-Key` space-separated (Fastly, Varnish),
 * `Cache-Tag` comma-separated (Cloudflare). Duplicates are dropped, the first occurrence keeps
 * its place.
 */
export function tagHeaders(keys: readonly string[]): { 'surrogate-key': string; 'cache-tag': string } {
  const unique = [...new Set(keys)]
  return { 'surrogate-key': unique.join(' '), 'cache-tag': unique.join(',') }
}
