/**
 * The route label of a request the pages API's serving core did not answer (`http/serve.ts`
 * labels its own): cms-shield's operational endpoints, by method and path. A declarative table.
 * @module
 */
import type { RouteName } from './shield-events.js'

const OPERATIONAL: Readonly<Record<string, RouteName>> = {
  '/-/refresh': 'refresh',
  '/healthz': 'healthz',
  '/readyz': 'readyz',
  '/metrics': 'metrics',
}

/** PURGE is answered on any path; the other endpoints have one each; the rest is `other`. */
export function operationalRouteOf(method: string, path: string): RouteName {
  if (method === 'PURGE') return 'purge'
  return Object.hasOwn(OPERATIONAL, path) ? OPERATIONAL[path]! : 'other'
}
