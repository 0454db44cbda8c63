/**
 * Plans `GET /api/v1/cms/pages/find/`: `get_queryset()` (so `type` and `site` apply), then
 * `html_path`, then `id`; no filter backends, no unknown-parameter check (spec §4).
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import { forwardUnlessDoomed } from './forward-guard.js'
import { negotiate } from './negotiate.js'
import { pythonInt } from './python-int.js'
import type { QueryParams } from './query-params.js'
import type { FindPlan } from './plan-types.js'
import { resolveTypes, siteFilter, toPageId } from './plan-steps.js'
import { wagtailErrors } from './wagtail-messages.js'

export function planFind(params: QueryParams, snapshot: Snapshot, accept?: string): FindPlan {
  const refused = negotiate(params, accept)
  if (refused) return { kind: 'error', error: refused }
  const forward = (reason: string): FindPlan => {
    // Without html_path, the CMS can only end in `queryset.get(id='abc')`: an uncaught ValueError
    // (500). Answer what a non-numeric id gets here below, "not found". With html_path, the CMS
    // may still route it (302) before it reaches the id, so it is asked.
    const rawId = params.get('id')
    if (!params.has('html_path') && rawId !== undefined && !pythonInt(rawId).ok) return { kind: 'error', error: wagtailErrors.findNotFound }
    return forwardUnlessDoomed(params, snapshot, reason, { view: 'find' })
  }

  const typed = resolveTypes(params, snapshot)
  if ('error' in typed) return { kind: 'error', error: typed.error }
  if ('forward' in typed) return forward(typed.forward)

  const site = siteFilter(params)
  if ('error' in site) return { kind: 'error', error: site.error }
  if ('forward' in site) return forward(site.forward)

  const types = typed.value.types
  const visible = (id: number | undefined): id is number => {
    if (id === undefined) return false
    const page = snapshot.byId.get(id)
    return page !== undefined && (types === null || types.has(page.type))
  }
  // Wagtail 7.1+ passes every other parameter on to the detail URL (spec §4).
  const forwardQuery = params.lists().filter(([key]) => key !== 'id' && key !== 'html_path')

  const htmlPath = params.get('html_path')
  if (htmlPath !== undefined) {
    const key = htmlPath.split('/').filter((part) => part !== '').join('/')
    const id = snapshot.byPath.get(key)
    // A path the slug tree does not know may still route in the CMS (custom `route()`, a live
    // page below an unpublished one): only the CMS can say.
    if (id === undefined) return forward('html_path unknown to the snapshot')
    if (visible(id)) return { kind: 'index', id, forwardQuery }
  }

  const rawId = params.get('id')
  if (rawId !== undefined) {
    // Wagtail answers 500 for a non-numeric id (an uncaught ValueError); "not found" is the
    // truthful answer that is not a server error.
    const parsed = pythonInt(rawId)
    const id = parsed.ok ? toPageId(parsed.value) : undefined
    if (visible(id)) return { kind: 'index', id, forwardQuery }
  }
  return { kind: 'index', id: undefined, forwardQuery }
}
