/**
 * The scrape endpoint, on a small Fastify app driven with `inject`.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { createMetrics, type Metrics } from '../../observability/metrics.js'
import { createShieldEvents, type ShieldEvents } from '../../observability/shield-events.js'
import { registerMetricsRoute } from './metrics.js'

const apps: FastifyInstance[] = []
const opened: Metrics[] = []
afterEach(async () => {
  for (const metrics of opened.splice(0)) metrics.close()
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

function buildTestApp(): { app: FastifyInstance; events: ShieldEvents; metrics: Metrics } {
  const events = createShieldEvents()
  const metrics = createMetrics({ events, tiers: [], snapshot: () => undefined, now: () => 0 })
  const app = Fastify({ logger: false })
  registerMetricsRoute(app, metrics)
  apps.push(app)
  opened.push(metrics)
  return { app, events, metrics }
}

describe('GET /metrics', () => {
  it('answers 200 with the registry’s text, its content type, and no-store', async () => {
    const { app, metrics } = buildTestApp()
    const response = await app.inject({ method: 'GET', url: '/metrics' })

    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toBe(metrics.contentType)
    expect(response.headers['cache-control']).toBe('no-store')
    expect(response.body).toContain('# TYPE cms_shield_http_requests_total counter')
    expect(response.body).toContain('# TYPE cms_shield_process_cpu_user_seconds_total counter')
  })

  it('shows what was counted before the scrape', async () => {
    const { app, events } = buildTestApp()
    events.emit('webhook', { result: 'bad-request' })
    events.emit('webhook', { result: 'bad-request' })

    const response = await app.inject({ method: 'GET', url: '/metrics' })
    expect(response.body).toMatch(/^cms_shield_webhook_requests_total\{result="bad-request"\} 2$/m)
  })

  it('answers HEAD with the same headers and no body', async () => {
    const { app, metrics } = buildTestApp()
    const response = await app.inject({ method: 'HEAD', url: '/metrics' })

    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toBe(metrics.contentType)
    expect(response.headers['cache-control']).toBe('no-store')
    expect(response.body).toBe('')
  })

  it('registers nothing but GET and HEAD', async () => {
    const { app } = buildTestApp()
    expect((await app.inject({ method: 'POST', url: '/metrics' })).statusCode).toBe(404)
  })
})
