/**
 * What follows every answer, whichever writer sent it: one log line and one `request` event.
 * Both writers (`fast-path.ts` and the Fastify hook in `fastify-writer.ts`) call this and nothing
 * else, so the line and the metric cannot drift apart between them.
 * @module
 */
import { writesAt } from '../observability/logging.js'
import { operationalRouteOf } from '../observability/request-labels.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import { apiRouteName, createApiRouter, pathOf, type RouteApiPath } from './api-router.js'
import type { ServeLabels } from './serve.js'

export interface RequestLogger {
  readonly level: string
  info(details: object, message: string): void
  /** pino's: fires when `level` is set. Without it, the level is read once. */
  on?(event: 'level-change', listener: () => void): unknown
}

const DEFAULT_ROUTE = createApiRouter()

export type AfterAnswer = (requestId: string | undefined, method: string, url: string, labels: ServeLabels, durationMs: number) => void

export function createAfterAnswer(logger: RequestLogger, events: Pick<ShieldEvents, 'emit'>): AfterAnswer {
  // pino's `level` is a getter that looks the level's name up again on every read; at a cached
  // hit's price that read and the table lookup are a share of a request's CPU worth saving
  // (docs/performance.md, "Where a hit's CPU goes beyond bare node"). Read once, and again when set.
  let logsRequests = writesAt(logger.level, 'info')
  logger.on?.('level-change', () => {
    logsRequests = writesAt(logger.level, 'info')
  })
  return (reqId, method, url, labels, durationMs) => {
    const { route, cache, status } = labels
    // Checked first: building the line's object for a level that is off costs every request.
    if (logsRequests) {
      logger.info({ reqId, method, url, route, statusCode: status, cache, ms: Math.round(durationMs) }, 'request')
    }
    events.emit('request', { route, method, status, cache, durationMs })
  }
}

/**
 * Labels for what the serving core did not answer (operational endpoints, parser and body
 * errors, shedding outside the API): no cache was involved.
 */
export function unservedLabels(method: string, url: string, status: number, routeOf: RouteApiPath = DEFAULT_ROUTE): ServeLabels {
  const path = pathOf(url)
  const target = method === 'PURGE' ? undefined : routeOf(path)
  const route = target === undefined ? operationalRouteOf(method, path) : apiRouteName(target)
  return { route, cache: 'none', status }
}
