/**
 * With Redis, the CMS budget for client-caused requests is one budget for the cluster: three
 * instances do not triple it. With Redis down, each instance spends a budget of its own, says so
 * in its logs and metrics, and no read fails because of the limiter.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { sharedRedisUrl, startRedis } from '../helpers/redis-server.js'
import { startShield, UNLIMITED_READ_THROUGH, type Harness } from '../helpers/start-shield.js'
import { captureLogs, metric, scrape, type LogCapture } from './cms-faults-support.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const BURST = 4
const RATE = 1

async function cluster(redisUrl: string, n: number): Promise<{ cms: FakeWagtail; instances: Harness[]; logs: LogCapture[] }> {
  const cms = await startFakeWagtail({ pages: generateSite() })
  cleanups.push(() => cms.close())
  const env = {
    ...UNLIMITED_READ_THROUGH,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `test-budget-${randomUUID()}:`,
    READ_THROUGH_RATE: String(RATE),
    READ_THROUGH_BURST: String(BURST),
    READ_THROUGH_ADAPTIVE: 'false',
    LEADER_LEASE: '900ms',
    LOG_LEVEL: 'info',
  }
  const instances: Harness[] = []
  const logs: LogCapture[] = []
  for (let i = 0; i < n; i++) {
    const capture = captureLogs()
    const instance = await startShield({ sharedOrigin: cms, env, synced: false, deps: { autoSync: true, logger: undefined, logStream: capture.stream } })
    cleanups.push(() => instance.close())
    instances.push(instance)
    logs.push(capture)
  }
  const deadline = Date.now() + 10_000
  while (!instances.every((h) => h.app.shield.sync.current !== undefined && h.app.shield.shared!.isUp())) {
    if (Date.now() > deadline) throw new Error('the cluster did not come up within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return { cms, instances, logs }
}

/** Every instance gets `each` distinct searches from clients of its own, all at once. */
async function flood(instances: readonly Harness[], each: number, tag: string): Promise<{ statuses: number[]; elapsedMs: number }> {
  const started = Date.now()
  const answers = await Promise.all(
    instances.flatMap((h, i) =>
      Array.from({ length: each }, (_, n) =>
        h.app.inject({ method: 'GET', url: `/api/v1/cms/pages/?search=${tag}-${i}-${n}`, remoteAddress: `198.51.100.${i * 20 + n + 1}` }),
      ),
    ),
  )
  return { statuses: answers.map((a) => a.statusCode), elapsedMs: Date.now() - started }
}

const searches = (cms: FakeWagtail) => cms.requests.filter((r) => r.url.includes('search=')).length

describe('read-through budget across instances', () => {
  it('lets three instances sharing Redis cause one budget of CMS requests, not three', async () => {
    const { cms, instances } = await cluster(await sharedRedisUrl(), 3)
    cms.resetHits()
    const { statuses, elapsedMs } = await flood(instances, BURST, 'shared')
    const allowed = BURST + Math.ceil((RATE * elapsedMs) / 1000)
    expect(searches(cms)).toBeGreaterThanOrEqual(BURST)
    expect(searches(cms)).toBeLessThanOrEqual(allowed)
    expect(statuses.filter((s) => s === 200)).toHaveLength(searches(cms))
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    for (const h of instances) expect(JSON.parse((await h.get('/readyz')).body).readThrough.scope).toBe('cluster')
  })

  it('falls back to a budget per instance while Redis is down, logged and counted, and fails no read because of it', async () => {
    const redis = await startRedis()
    cleanups.push(() => redis.stop())
    const { cms, instances, logs } = await cluster(redis.url, 3)
    await redis.kill()
    const deadline = Date.now() + 5_000
    while (instances.some((h) => h.app.shield.shared!.isUp())) {
      if (Date.now() > deadline) throw new Error('Redis still looked up 5 s after it was killed')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    cms.resetHits()
    const { statuses } = await flood(instances, BURST, 'alone')
    // Each instance spends its own burst: every miss within it reaches the CMS and is answered.
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(instances.length * BURST - 1)
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    expect(searches(cms)).toBe(statuses.filter((s) => s === 200).length)
    for (const [i, h] of instances.entries()) {
      expect(JSON.parse((await h.get('/readyz')).body).readThrough.scope).toBe('local')
      expect(metric(await scrape(h), 'cms_shield_read_through_budget_fallbacks_total')).toBe(1)
      expect(logs[i]!.lines().filter((line) => line.msg.startsWith('read-through budget: Redis cannot be reached'))).toHaveLength(1)
    }
  })
})
