/**
 * What follows every answer, whichever writer sent it: one log line and one `request` event.
 * Both writers (`fast-path.ts` and the Fastify hook in `fastify-writer.ts`) call this and nothing
 * else, so the line and the metric cannot drift apart between them.
 * @module
 */
import { writesAt } from '../observability/logging.js'
import { operationalRouteOf } from '../observability/request-labels.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import { apiRouteName, pathOf, routeApiPath } from './api-router.js'
import type { ServeLabels } from './serve.js'

export interface RequestLogger {
  readonly level: string
  info(details: object, message: string): void
}

export type AfterAnswer = (requestId: string | undefined, method: string, url: string, labels: ServeLabels, durationMs: number) => void

export function createAfterAnswer(logger: RequestLogger, events: Pick<ShieldEvents, 'emit'>): AfterAnswer {
  return (reqId, method, url, labels, durationMs) => {
    const { route, cache, status } = labels
    // Checked first: building the line's object for a level that is off costs every request.
    if (writesAt(logger.level, 'info')) {
      logger.info({ reqId, method, url, route, statusCode: status, cache, ms: Math.round(durationMs) }, 'request')
    }
    events.emit('request', { route, method, status, cache, durationMs })
  }
}

/**
 * Labels for what the serving core did not answer (operational endpoints, parser and body
 * errors, shedding outside the API): no cache was involved.
 */
export function unservedLabels(method: string, url: string, status: number): ServeLabels {
  const path = pathOf(url)
  const target = method === 'PURGE' ? undefined : routeApiPath(path)
  const route = target === undefined ? operationalRouteOf(method, path) : apiRouteName(target)
  return { route, cache: 'none', status }
}
