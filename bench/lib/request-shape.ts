/**
 * Which of cms-shield's requests to the CMS a client caused, told by the request alone, so the
 * benchmark can count read-through at the fake CMS without trusting cms-shield's own metrics.
 *
 * cms-shield's sync only ever sends details without a query, `find/?id=`, listings that
 * always carry `limit` and otherwise only `offset`, `fields`, `type` (a typed pass, or the empty
 * probe) and `id` (the one-item listing of a refresh), and `?type=&order=&limit=0` (whether the CMS
 * orders a type by one of its date fields). Everything else it sends was forwarded for a client: a
 * search, another order, a type without a limit, a find by path, a detail with a query, a
 * children list.
 * @module
 */

export type RequestShape = 'sync' | 'not-api' | 'search' | 'order' | 'type' | 'find' | 'detail-query' | 'other-query'

export const READ_THROUGH_SHAPES: readonly RequestShape[] = ['search', 'order', 'type', 'find', 'detail-query', 'other-query']

/** The listing parameters the sync's windows, probes and refreshes use. */
const SYNC_LISTING_KEYS = new Set(['fields', 'offset', 'limit', 'type', 'id'])

export function requestShape(kind: 'list' | 'detail' | 'find' | 'endpoint' | 'other', query: URLSearchParams): RequestShape {
  const keys = [...new Set(query.keys())]
  switch (kind) {
    case 'detail':
      return keys.length === 0 ? 'sync' : 'detail-query'
    case 'find':
      return keys.length === 1 && keys[0] === 'id' ? 'sync' : 'find'
    case 'list':
      if (query.has('search')) return 'search'
      if (query.get('limit') === '0' && query.has('type') && keys.every((key) => ['type', 'order', 'limit'].includes(key))) return 'sync'
      if (query.has('order')) return 'order'
      if (query.has('limit') && keys.every((key) => SYNC_LISTING_KEYS.has(key))) return 'sync'
      return (query.get('type') ?? '') !== '' ? 'type' : 'other-query'
    default:
      // Not the pages API: neither the sync nor read-through (which forwards API paths only) sends these.
      return 'not-api'
  }
}
