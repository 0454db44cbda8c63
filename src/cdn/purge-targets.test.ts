/**
 * The three purge targets against fakes of their APIs over real HTTP on loopback
 * (`test/helpers/fake-purge-apis.ts`), delivered by the real queue. Waits between attempts are
 * recorded and run at once: nothing here sleeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeCloudflare, startFakeFastly, startVarnishRecorder, type FakePurgeApi } from '../../test/helpers/fake-purge-apis.js'
import type { Timers } from '../timers.js'
import { createCloudflareTarget } from './cloudflare-target.js'
import { createFastlyTarget } from './fastly-target.js'
import { createPurgeDelivery, type PurgeReport } from './purge-delivery.js'
import type { PurgeHttp, PurgeTarget } from './purge-target.js'
import { MAX_KEY_LENGTH } from '../tree/surrogate-keys.js'
import { createVarnishTarget, VARNISH_MAX_KEYS } from './varnish-target.js'

const NOW = Date.UTC(2026, 0, 1)
const http: PurgeHttp = { timeoutMs: 5_000, now: () => NOW }

let fakes: FakePurgeApi[] = []
afterEach(async () => {
  await Promise.all(fakes.map((fake) => fake.close()))
  fakes = []
})

async function fake<T extends FakePurgeApi>(started: Promise<T>): Promise<T> {
  const api = await started
  fakes.push(api)
  return api
}

/** Delivers through `target`, with every wait recorded and run on the next turn instead of slept. */
function deliver(target: PurgeTarget) {
  const delays: number[] = []
  const reports: PurgeReport[] = []
  /** Reasons of the purges that failed for good. */
  const errors: string[] = []
  const timers: Timers = {
    setTimeout(callback, ms) {
      delays.push(ms)
      return setImmediate(callback)
    },
    clearTimeout: (handle) => clearImmediate(handle as NodeJS.Immediate),
  }
  const noop = () => undefined
  const queue = createPurgeDelivery({
    targets: [target], now: () => NOW, random: () => 0, timers, giveUpAfterMs: 3_600_000,
    logger: {
      info: noop,
      error: noop,
      warn: (details, message) => {
        if (!message.includes('retrying')) errors.push(String((details as { reason?: unknown }).reason))
      },
    },
    report: (report) => reports.push(report),
  })
  return { queue, delays, reports, errors, outcomes: () => reports.map((r) => r.outcome) }
}

const keys = (n: number) => Array.from({ length: n }, (_, i) => `cms-page-${i + 1}`)

describe('the Fastly target', () => {
  const service = { serviceId: 'SU1Z0isxPaozGVKXdv0eY', token: 'fastly-token' }
  const target = (api: FakePurgeApi, soft = false, token = service.token) =>
    createFastlyTarget({ apiUrl: api.url, serviceId: service.serviceId, token, soft, http })

  it('purges by surrogate keys with the token in Fastly-Key, 256 keys per request at most', async () => {
    const api = await fake(startFakeFastly(service))
    const d = deliver(target(api))
    d.queue.enqueue(keys(600), NOW)
    await d.queue.idle()
    expect(api.purges.map((p) => p.keys.length)).toEqual([256, 256, 88])
    expect(api.purgedKeys()).toEqual(keys(600))
    expect(api.purges[0]).toMatchObject({ method: 'POST', path: `/service/${service.serviceId}/purge`, soft: false })
    expect(api.purges[0]!.headers['fastly-soft-purge']).toBeUndefined()
    expect(d.outcomes()).toEqual(['ok', 'ok', 'ok'])
  })

  it('asks for a soft purge with Fastly-Soft-Purge: 1 when CDN_SOFT_PURGE is on', async () => {
    const api = await fake(startFakeFastly(service))
    const d = deliver(target(api, true))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(api.purges).toEqual([expect.objectContaining({ keys: ['cms-page-3'], soft: true })])
  })

  it('retries a 429 after its Retry-After, and after Fastly-RateLimit-Reset when that is all it gives', async () => {
    const api = await fake(startFakeFastly(service))
    api.failNext(1, 429, { 'retry-after': '5' }, '{"msg":"Too many requests"}')
    api.failNext(1, 429, { 'fastly-ratelimit-remaining': '0', 'fastly-ratelimit-reset': String(NOW / 1000 + 12) })
    const d = deliver(target(api))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(d.delays).toEqual([5_000, 12_000])
    expect(api.requests).toHaveLength(3)
    expect(api.purgedKeys()).toEqual(['cms-page-3'])
    expect(d.outcomes()).toEqual(['retried', 'retried', 'ok'])
  })

  it('retries a 500 with backoff', async () => {
    const api = await fake(startFakeFastly(service))
    api.failNext(2, 500)
    const d = deliver(target(api))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(d.delays).toEqual([500, 1_000])
    expect(d.outcomes()).toEqual(['retried', 'retried', 'ok'])
  })

  it('fails once, without retrying, when Fastly refuses the token', async () => {
    const api = await fake(startFakeFastly(service))
    const d = deliver(target(api, false, 'wrong-token'))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(api.requests).toHaveLength(1)
    expect(d.outcomes()).toEqual(['failed'])
    expect(d.errors).toEqual([expect.stringContaining('401')])
  })
})

describe('the Cloudflare target', () => {
  const zone = { zoneId: '023e105f4ecef8ad9ca31a8372d0c353', token: 'cloudflare-token' }
  const target = (api: FakePurgeApi, token = zone.token) => createCloudflareTarget({ apiUrl: api.url, zoneId: zone.zoneId, token, http })

  it('purges by cache tags with a bearer token, 100 tags per request at most', async () => {
    const api = await fake(startFakeCloudflare(zone))
    const d = deliver(target(api))
    d.queue.enqueue(keys(250), NOW)
    await d.queue.idle()
    expect(api.purges.map((p) => p.keys.length)).toEqual([100, 100, 50])
    expect(api.purgedKeys()).toEqual(keys(250))
    expect(api.purges[0]).toMatchObject({ method: 'POST', path: `/zones/${zone.zoneId}/purge_cache` })
    expect(d.outcomes()).toEqual(['ok', 'ok', 'ok'])
  })

  it('retries a 429 after its Retry-After and a 502 with backoff', async () => {
    const api = await fake(startFakeCloudflare(zone))
    api.failNext(1, 429, { 'retry-after': '3' }, JSON.stringify({ success: false, errors: [{ code: 1134, message: 'rate limited' }] }))
    api.failNext(1, 502)
    const d = deliver(target(api))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(d.delays).toEqual([3_000, 1_000])
    expect(d.outcomes()).toEqual(['retried', 'retried', 'ok'])
    expect(api.purgedKeys()).toEqual(['cms-page-3'])
  })

  it('takes success: false for a refusal even with a 200, and does not retry it', async () => {
    const api = await fake(startFakeCloudflare(zone))
    api.failNext(1, 200, {}, JSON.stringify({ success: false, errors: [{ code: 1015, message: 'zone purge disabled' }], messages: [] }))
    const d = deliver(target(api))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(api.requests).toHaveLength(1)
    expect(d.outcomes()).toEqual(['failed'])
    expect(d.errors).toEqual([expect.stringContaining('1015 zone purge disabled')])
  })

  it('fails once, without retrying, when Cloudflare refuses the token', async () => {
    const api = await fake(startFakeCloudflare(zone))
    const d = deliver(target(api, 'wrong-token'))
    d.queue.enqueue(['cms-page-3'], NOW)
    await d.queue.idle()
    expect(api.requests).toHaveLength(1)
    expect(d.errors).toEqual([expect.stringContaining('403')])
  })
})

describe('the Varnish target', () => {
  it('keeps a request\'s xkey-purge within Varnish\'s default 8 KB request header, whatever the keys', () => {
    const longest = 'xkey-softpurge: '.length + VARNISH_MAX_KEYS * (MAX_KEY_LENGTH + 1)
    expect(longest).toBeLessThanOrEqual(8192)
  })

  it('sends PURGE / with the keys space-separated in xkey-purge, or xkey-softpurge when soft', async () => {
    const varnish = await fake(startVarnishRecorder())
    const hard = deliver(createVarnishTarget({ baseUrl: varnish.url, soft: false, http }))
    hard.queue.enqueue(['cms-page-3', 'cms-children-1'], NOW)
    await hard.queue.idle()
    const soft = deliver(createVarnishTarget({ baseUrl: varnish.url, soft: true, http }))
    soft.queue.enqueue(['cms-list'], NOW)
    await soft.queue.idle()
    expect(varnish.purges).toEqual([
      expect.objectContaining({ method: 'PURGE', path: '/', keys: ['cms-page-3', 'cms-children-1'], soft: false }),
      expect.objectContaining({ method: 'PURGE', path: '/', keys: ['cms-list'], soft: true }),
    ])
    expect(varnish.purges[0]!.headers['xkey-purge']).toBe('cms-page-3 cms-children-1')
  })

  it('fails once on a 403 (not in the ACL) and retries a Varnish that cannot be reached', async () => {
    const varnish = await fake(startVarnishRecorder())
    varnish.failNext(1, 403)
    const refused = deliver(createVarnishTarget({ baseUrl: varnish.url, soft: false, http }))
    refused.queue.enqueue(['cms-page-3'], NOW)
    await refused.queue.idle()
    expect(refused.outcomes()).toEqual(['failed'])

    const gone = await startVarnishRecorder()
    await gone.close()
    const down = deliver(createVarnishTarget({ baseUrl: gone.url, soft: false, http }))
    down.queue.enqueue(['cms-page-3'], NOW)
    while (down.reports.length < 3) await new Promise<void>((resolve) => setImmediate(resolve))
    await down.queue.close()
    expect(down.outcomes().slice(0, 3)).toEqual(['retried', 'retried', 'retried'])
  })
})
