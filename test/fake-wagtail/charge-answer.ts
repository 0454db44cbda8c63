/**
 * What an answer costs the CMS (`cost-model.ts`): a listing by its items and whether they show
 * `html_url`, a detail at the detail rate, anything else the fixed part.
 * @module
 */
import { costOf, type CostKind, type CostModel } from './cost-model.js'
import type { Answer } from './pages-api.js'
import type { RequestKind } from './types.js'

interface ListingShape {
  readonly items: number
  readonly withUrl: boolean
}

/** The items of a listing answer, and whether the first shows `meta.html_url`. */
function listingShape(answer: Answer): ListingShape {
  if (answer.status !== 200) return { items: 0, withUrl: false }
  const parsed = JSON.parse(answer.body.toString('utf8')) as { items?: { meta?: Record<string, unknown> }[] }
  const items = Array.isArray(parsed.items) ? parsed.items : []
  return { items: items.length, withUrl: items[0]?.meta?.html_url !== undefined }
}

function costKind(kind: RequestKind, answer: Answer): CostKind {
  if (kind === 'list') return 'listing'
  // A 404 for a detail costs the CMS a lookup, not a serialisation.
  if (kind === 'detail' && answer.status === 200) return 'detail'
  return 'other'
}

export function chargeFor(model: CostModel, kind: RequestKind, answer: Answer): Promise<void> {
  const charged = costKind(kind, answer)
  const shape = charged === 'listing' ? listingShape(answer) : { items: 0, withUrl: false }
  return model.charge(charged, costOf(model.rates, charged, shape.items, shape.withUrl))
}
