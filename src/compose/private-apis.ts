/**
 * Which non-public hooks this process uses. Three make hits or memory cheaper by reaching past a
 * public API: prepared header blocks (Node's `ServerResponse#_storeHeader`), request metrics read
 * from a tally at scrape (prom-client's `getForPromString`), and compacting the heap after a full
 * sync (V8's `HeapProfiler.collectGarbage` through `node:inspector`). Each checks its own
 * behaviour (the first two once, when their module loads; the collection each time it runs) and
 * falls back to the public path where it differs; `PRIVATE_APIS=false` takes the public path for
 * all three. The choice is logged once per app and exposed as `cms_shield_private_api`.
 * @module
 */
import { PREPARED_HEADERS_SUPPORTED } from '../http/prepared-headers.js'
import { TALLIED_METRICS_SUPPORTED } from '../observability/tallied-metrics.js'

export type ApiPath = 'private' | 'public'

// A type, not an interface, so that it is a plain record of paths to the metrics module.
export type PrivateApiPaths = {
  readonly preparedHeaders: ApiPath
  readonly talliedMetrics: ApiPath
  /** Whether the heap is compacted after a full sync; the collection reports whether it ran. */
  readonly heapReclaim: ApiPath
}

export function privateApiPaths(enabled: boolean): PrivateApiPaths {
  const path = (supported: boolean): ApiPath => (enabled && supported ? 'private' : 'public')
  return { preparedHeaders: path(PREPARED_HEADERS_SUPPORTED), talliedMetrics: path(TALLIED_METRICS_SUPPORTED), heapReclaim: path(true) }
}

/**
 * One line: a warning when a self-check sent a hook to its public path (this Node or prom-client
 * no longer behaves as the hook relies on, and hits cost more), information when PRIVATE_APIS=false
 * did, and a debug line otherwise.
 */
export function logPrivateApiPaths(logger: { debug(details: object, message: string): void; info(details: object, message: string): void; warn(details: object, message: string): void }, paths: PrivateApiPaths, enabled: boolean): void {
  const message = 'runtime: private API paths'
  if (!enabled) logger.info({ privateApis: paths }, `${message} (PRIVATE_APIS=false)`)
  else if (Object.values(paths).includes('public')) logger.warn({ privateApis: paths }, `${message}: a self-check failed, its public path is taken`)
  else logger.debug({ privateApis: paths }, message)
}
