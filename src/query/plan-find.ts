/**
 * Plans `GET /api/v1/cms/pages/find/`: `get_queryset()` (so `type` and `site` apply), then
 * `html_path`, then `id`; no filter backends, no unknown-parameter check (docs/wagtail-compatibility.md#find-view).
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import { forwardUnlessDoomed } from './forward-guard.js'
import { negotiate } from './negotiate.js'
import { pythonInt } from './python-int.js'
import type { QueryParams } from './query-params.js'
import type { FindPlan } from './plan-types.js'
import { findPathKey, NOTHING_KNOWN_ABSENT, type KnownAbsent } from './known-absent.js'
import { resolveTypes, siteFilter, toPageId } from './plan-steps.js'
import { wagtailErrors, notAcceptableIn } from './wagtail-messages.js'

/**
 * @param known what the CMS said does not exist under this snapshot: `type` names, and
 * `html_path`s that gave no page in the queryset their `type` and `site` choose.
 */
export function planFind(params: QueryParams, snapshot: Snapshot, accept?: string, known: KnownAbsent = NOTHING_KNOWN_ABSENT): FindPlan {
  const refused = negotiate(params, accept, notAcceptableIn(snapshot.dialect.notAcceptableText))
  if (refused) return { kind: 'error', error: refused }
  const rawId = params.get('id')
  const htmlPath = params.get('html_path')
  // Set once `type` and `site` are decided here.
  let types: ReadonlySet<string> | null = null
  const visible = (id: number | undefined): id is number => {
    if (id === undefined) return false
    const page = snapshot.byId.get(id)
    return page !== undefined && (types === null || types.has(page.type))
  }
  /** @param localQueryset whether `type` and `site` were decided here (`visible` is exact). */
  const forward = (reason: string, localQueryset: boolean): FindPlan => {
    // Without html_path, the CMS can only end in `queryset.get(id='abc')`: an uncaught ValueError
    // (500). Answer what a non-numeric id gets here below, "not found". With html_path, the CMS
    // may still route it (302) before it reaches the id, so it is asked.
    if (!params.has('html_path') && rawId !== undefined && !pythonInt(rawId).ok) return { kind: 'error', error: wagtailErrors.findNotFound }
    if (htmlPath !== undefined && known.hasFindPath(findPathKey(htmlPath, params.get('type'), params.get('site')))) {
      // The CMS found no page for this path in this queryset: either the path does not route
      // (404, the id is never read) or its page is outside the queryset (then the id decides).
      // Only an id no page of the queryset has gives "not found" either way; a non-numeric one
      // gets it too (below, and from `http/cms-blame.ts` when the CMS fails on it).
      const id = rawId === undefined ? undefined : pythonInt(rawId)
      if (id === undefined || !id.ok) return { kind: 'error', error: wagtailErrors.findNotFound }
      if (localQueryset && !visible(toPageId(id.value))) return { kind: 'error', error: wagtailErrors.findNotFound }
    }
    return forwardUnlessDoomed(params, reason, { view: 'find' })
  }

  const typed = resolveTypes(params, snapshot, known)
  if ('error' in typed) return { kind: 'error', error: typed.error }
  if ('forward' in typed) return forward(typed.forward, false)

  const site = siteFilter(params)
  if ('error' in site) return { kind: 'error', error: site.error }
  if ('forward' in site) return forward(site.forward, false)

  types = typed.value.types
  // Wagtail 7.1+ passes every other parameter on to the detail URL (docs/wagtail-compatibility.md#find-view).
  const forwardQuery = params.lists().filter(([key]) => key !== 'id' && key !== 'html_path')

  if (htmlPath !== undefined) {
    const key = htmlPath.split('/').filter((part) => part !== '').join('/')
    const id = snapshot.byPath.get(key)
    // A path the slug tree does not know may still route in the CMS (custom `route()`, a live
    // page below an unpublished one): only the CMS can say.
    if (id === undefined) return forward('html_path unknown to the snapshot', true)
    if (visible(id)) return { kind: 'index', id, forwardQuery, typed: types !== null }
  }

  if (rawId !== undefined) {
    // Wagtail answers 500 for a non-numeric id (an uncaught ValueError); "not found" is the
    // truthful answer that is not a server error.
    const parsed = pythonInt(rawId)
    const id = parsed.ok ? toPageId(parsed.value) : undefined
    if (visible(id)) return { kind: 'index', id, forwardQuery, typed: types !== null }
  }
  return { kind: 'index', id: undefined, forwardQuery, typed: types !== null }
}
