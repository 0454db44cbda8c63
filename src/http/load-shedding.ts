/**
 * Load shedding with @fastify/under-pressure: while the event loop lags past
 * `LOAD_SHED_EVENT_LOOP_DELAY` or the V8 heap in use passes `LOAD_SHED_HEAP_USED`, API requests get
 * a quick 503 with `Retry-After` instead of queueing behind the backlog (a CDN in front serves its
 * stale copy meanwhile: `stale-if-error`). The operational routes are never shed: a liveness probe
 * failing under load would restart a busy instance, and metrics matter most then.
 * @module
 */
import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { getHeapStatistics } from 'node:v8'
import type { Config } from '../config/load-config.js'
import { OVERLOADED_ANSWER } from './answers.js'
import { pathOf, type RouteApiPath } from './api-router.js'

type PressureHandler = NonNullable<FastifyUnderPressureOptions['pressureHandler']>

const RETRY_AFTER_SECONDS = Number(OVERLOADED_ANSWER.headers['retry-after'])
const NEVER_SHED = new Set(['/healthz', '/readyz', '/metrics'])
const SHED = OVERLOADED_ANSWER

/** The heap bound: the configured one, or 90% of what V8 may grow to. */
export function heapLimitBytes(config: Pick<Config, 'loadShedHeapUsedBytes'>): number {
  return config.loadShedHeapUsedBytes ?? Math.floor(getHeapStatistics().heap_size_limit * 0.9)
}

export async function registerLoadShedding(
  app: FastifyInstance,
  config: Pick<Config, 'loadShedEventLoopDelayMs' | 'loadShedHeapUsedBytes'>,
  route: RouteApiPath,
  onShed?: (reason: string) => void,
): Promise<void> {
  await app.register(underPressure, {
    // 0 switches a check off.
    maxEventLoopDelay: config.loadShedEventLoopDelayMs,
    maxHeapUsedBytes: heapLimitBytes(config),
    retryAfter: RETRY_AFTER_SECONDS,
    exposeStatusRoute: false,
    // Returning nothing lets the request through; returning a body sends it (the plugin's README,
    // "Any other return value than a promise or nullish will be sent"), which its types omit.
    pressureHandler: ((request: FastifyRequest, reply: FastifyReply, type: string) => {
      const path = pathOf(request.raw.url ?? '/')
      // The pages API sheds in the serving core (`serve.ts`), alike on both of its writers.
      if (NEVER_SHED.has(path) || route(path) !== undefined) return undefined
      onShed?.(type)
      reply.code(SHED.status).headers(SHED.headers)
      return SHED.body
    }) as unknown as PressureHandler,
  })
}
