/**
 * What the PURGE receiver and the refresh webhook ask of the sync: re-fetch some pages, run a
 * listing pass, or re-sync everything. A type-only module so the HTTP side and the sync meet on a
 * shape without importing each other.
 *
 * Wagtail's frontend_cache sends one PURGE per URL with no batching (docs/wagtail-compatibility.md#wire-format), and a publish of
 * a page with aliases purges every alias (docs/wagtail-compatibility.md#what-wagtail-purges): requests arrive in bursts, so the sync
 * coalesces them (`REFRESH_DEBOUNCE`) and callers never wait for the work.
 * @module
 */

export interface RefreshRequest {
  /** Pages whose detail (and listing item) to re-fetch. Positive safe integers. */
  readonly ids?: readonly number[]
  /** Re-sync the whole tree. */
  readonly all?: boolean
  /**
   * Run a listing pass: the tree's structure (new pages, moves, unpublished pages) is only visible
   * in the listing, and Wagtail never purges parents or listings (docs/wagtail-compatibility.md#what-wagtail-purges). Without it (and with
   * `ids`), the sync first tries to refresh the named pages in place (`refresh-in-place.ts`) and
   * runs the pass only when it finds more than their content changed.
   */
  readonly listing?: boolean
  /** Where the request came from, for logs and metrics (`purge`, `webhook`). */
  readonly reason: string
}

/** Fire-and-forget: returns at once; the sync merges requests that arrive close together. */
export type RequestRefresh = (request: RefreshRequest) => void
