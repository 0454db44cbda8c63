/**
 * Plans `GET /api/v1/cms/pages/<id>/`. Every filter backend runs on the detail view too, but
 * unknown keys, `limit` and `offset` are ignored (spec §4).
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import { forwardUnlessDoomed } from './forward-guard.js'
import { negotiate } from './negotiate.js'
import type { QueryParams } from './query-params.js'
import type { DetailPlan } from './plan-types.js'
import { KNOWN_LISTING_PARAMETERS } from './plan-listing.js'
import { FILTER_FIELDS, fieldFilters, forwardIfPresent, resolveTypes, siteFilter, toPageId, treeFilters } from './plan-steps.js'

const KNOWN = new Set<string>([...KNOWN_LISTING_PARAMETERS, ...FILTER_FIELDS])

/**
 * @param pathId the id segment of the path: Django's `[0-9]+`, leading zeros allowed.
 */
export function planDetail(pathId: string, params: QueryParams, snapshot: Snapshot, accept?: string): DetailPlan {
  const refused = negotiate(params, accept)
  if (refused) return { kind: 'error', error: refused }
  // The id is forwarded without its leading zeros (pages-service.ts).
  const forwardedId = /^[0-9]+$/.test(pathId) ? String(BigInt(pathId)) : pathId
  const forward = (reason: string) => forwardUnlessDoomed(params, snapshot, reason, { view: 'detail', pathId: forwardedId })

  const typed = resolveTypes(params, snapshot)
  if ('error' in typed) return { kind: 'error', error: typed.error }
  if ('forward' in typed) return forward(typed.forward)

  const site = siteFilter(params)
  if ('error' in site) return { kind: 'error', error: site.error }
  if ('forward' in site) return forward(site.forward)

  // Unknown keys are ignored here, unless one model's own fields could be filters.
  if (typed.value.singleModel && params.keys().some((key) => !KNOWN.has(key))) {
    return forward('model-specific parameters')
  }

  const fields = fieldFilters(params)
  if ('error' in fields) return { kind: 'error', error: fields.error }
  if ('forward' in fields) return forward(fields.forward)

  const tree = treeFilters(params, snapshot)
  if ('error' in tree) return { kind: 'error', error: tree.error }
  if ('forward' in tree) return forward(tree.forward)

  const rest = forwardIfPresent(params, ['order', 'translation_of', 'locale', 'search'])
  if ('forward' in rest) return forward(rest.forward)
  if (params.has('fields') && params.get('fields') !== '') return forward('fields is answered by the CMS')
  if (fields.value.needsCms) return forward('filter answered by the CMS')

  return {
    kind: 'index',
    id: /^[0-9]+$/.test(pathId) ? toPageId(BigInt(pathId)) : undefined,
    selection: { types: typed.value.types, filters: fields.value.filters, ...tree.value },
    modelName: typed.value.modelName,
  }
}
