/**
 * The query string a forwarded request sends the CMS, the same for every endpoint of the router
 * (DRF's views read their parameters alike). Pure.
 * @module
 */
import { databaseSafeValue } from './database-values.js'
import { djangoUrlencode, quotePlus, type QueryParams } from './query-params.js'

/**
 * Listings and details read only the last value of each key, and ignore `_` and `format`
 * (negotiated here). Integers the CMS's database cannot take go as ones it can (`database-values.ts`).
 */
export function forwardedQuery(params: QueryParams): string {
  const pairs = params
    .items()
    .filter(([key]) => key !== '_' && key !== 'format')
    .map(([key, value]) => `${quotePlus(key)}=${quotePlus(databaseSafeValue(key, value))}`)
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`
}

/**
 * find's query, every value kept: Wagtail 7.1+ repeats it in its Location. `format=api` was
 * negotiated here; sent on, the CMS would pick its HTML renderer and refuse cms-shield's JSON
 * Accept header with a 406.
 */
export function forwardedFindQuery(params: QueryParams): string {
  const query = djangoUrlencode(
    params.lists()
      .filter(([key]) => key !== 'format' || params.get('format') !== 'api')
      .map(([key, values]) => [key, values.map((value) => databaseSafeValue(key, value))]),
  )
  return query === '' ? '' : `?${query}`
}

/** A detail's path below its endpoint: the id as the database reads it, leading zeros gone. */
export function forwardedDetailPath(pathId: string): string {
  return `${databaseSafeValue('id', String(BigInt(pathId)))}/`
}
