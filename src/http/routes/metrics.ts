/**
 * `GET /metrics`: the Prometheus scrape endpoint. The route only serves what
 * `observability/metrics.ts` renders; it counts nothing itself, so the metrics stay fed by events.
 *
 * `no-store`: a scrape must see the process as it is now, never a copy a proxy or CDN kept.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../../observability/metrics.js'

export const METRICS_PATH = '/metrics'

export function registerMetricsRoute(app: FastifyInstance, metrics: Pick<Metrics, 'contentType' | 'render'>): void {
  app.get(METRICS_PATH, async (_request, reply) => {
    const text = await metrics.render()
    return reply.code(200).header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text)
  })
}
