/**
 * The public never sets the CMS's load: client-caused misses spend a budget (docs/operations.md,
 * "The CMS budget"), one client spends only its own share, what is over budget gets a stored answer or a
 * clear 429/503, and the sync and PURGEs never wait behind read-through requests.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, UNLIMITED_READ_THROUGH, type Harness } from '../helpers/start-shield.js'
import { captureLogs, eventually, manualTimers, metric, scrape, snapshotUrls } from './cms-faults-support.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const T0 = 1_700_000_000_000

async function start(env: Record<string, string>, clock: { now: number }, logStream?: { write(line: string): void }) {
  return startShield({
    env: { ...UNLIMITED_READ_THROUGH, READ_THROUGH_ADAPTIVE: 'false', READ_THROUGH_QUEUE_TIMEOUT: '0s', ...env, ...(logStream ? { LOG_LEVEL: 'info' } : {}) },
    deps: { now: () => clock.now, ...(logStream ? { logger: undefined, logStream } : {}) },
  })
}

async function from(harness: Harness, address: string, url: string, headers: Record<string, string> = {}) {
  const response = await harness.app.inject({ method: 'GET', url, remoteAddress: address, headers })
  return { status: response.statusCode, headers: response.headers, body: response.body }
}

const search = (n: number) => `/api/v1/cms/pages/?search=term${n}`

describe('read-through budget', () => {
  it("answers a client over its own share 429 with Retry-After and the API's envelope, while other clients still reach the CMS", async () => {
    const clock = { now: T0 }
    const logs = captureLogs()
    h = await start({ READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '2' }, clock, logs.stream)
    h.origin.resetHits()
    const answers = []
    for (let n = 0; n < 5; n++) answers.push(await from(h, '203.0.113.7', search(n)))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429, 429, 429])
    const refused = answers[2]!
    expect(JSON.parse(refused.body)).toEqual({ message: 'too many requests that only the CMS can answer; slow down' })
    expect(refused.headers['content-type']).toBe('application/json')
    expect(refused.headers['retry-after']).toBe('1')
    expect(h.origin.hits.total).toBe(2)

    // Another client's share is its own.
    expect((await from(h, '198.51.100.20', search(10))).status).toBe(200)
    expect(h.origin.hits.total).toBe(3)
    // A second later the first client has a token again.
    clock.now += 1_000
    expect((await from(h, '203.0.113.7', search(11))).status).toBe(200)

    const warnings = logs.lines().filter((line) => line.msg.startsWith('read-through: a client is over its share'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ client: '203.0.113.7', level: 40 })
    const samples = await scrape(h)
    expect(metric(samples, 'cms_shield_read_through_rejections_total', { reason: 'client_share' })).toBe(3)
    expect(metric(samples, 'cms_shield_http_requests_total', { status: '429' })).toBe(3)
  })

  it('holds a refusal for the client\'s share for READ_THROUGH_QUEUE_TIMEOUT, so a client sending as fast as it is answered slows down', async () => {
    const timers = manualTimers()
    h = await startShield({
      env: { ...UNLIMITED_READ_THROUGH, READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '1', READ_THROUGH_QUEUE_TIMEOUT: '750ms' },
      deps: { now: () => T0, random: () => 1, timers: timers.timers },
    })
    expect((await from(h, '203.0.113.7', search(1))).status).toBe(200)
    let answered: { status: number } | undefined
    const refused = from(h, '203.0.113.7', search(2)).then((answer) => (answered = answer))
    await eventually(() => timers.pending().includes(750), 'the refusal is held')
    expect(answered).toBeUndefined()
    // Meanwhile every other reader is answered at once.
    expect((await from(h, '198.51.100.1', search(3))).status).toBe(200)
    timers.fireAll()
    await refused
    expect(answered!.status).toBe(429)
    expect(h.origin.hits.total).toBeGreaterThan(0)
  })

  it('answers 503 with Retry-After once the CMS budget is spent, whoever asks, and lets misses through again as it refills', async () => {
    const clock = { now: T0 }
    h = await start({ READ_THROUGH_RATE: '2', READ_THROUGH_BURST: '3' }, clock)
    h.origin.resetHits()
    const statuses = []
    for (let n = 0; n < 6; n++) statuses.push((await from(h, `198.51.100.${n + 1}`, search(n))).status)
    expect(statuses).toEqual([200, 200, 200, 503, 503, 503])
    const refused = await from(h, '198.51.100.99', search(99))
    expect(JSON.parse(refused.body)).toEqual({ message: 'the CMS is busy; try again later' })
    expect(refused.headers['retry-after']).toBe('1')
    expect(h.origin.hits.total).toBe(3)
    clock.now += 500
    expect((await from(h, '198.51.100.99', search(99))).status).toBe(200)
    expect((await from(h, '198.51.100.99', search(100))).status).toBe(503)
    expect(h.origin.hits.total).toBe(4)
    expect(metric(await scrape(h), 'cms_shield_read_through_rejections_total', { reason: 'cms_budget' })).toBe(5)
  })

  it('serves a stored answer past its freshness, saying so in Cache-Status, when the budget has no room to refresh it', async () => {
    const clock = { now: T0 }
    h = await start({ READ_THROUGH_RATE: '1', READ_THROUGH_BURST: '1', CACHE_TTL: '10s', CACHE_STALE_WHILE_REVALIDATE: '0s', CACHE_STALE_IF_ERROR: '1h', CACHE_TTL_JITTER_PERCENT: '0' }, clock)
    const first = await from(h, '198.51.100.1', search(1))
    expect(first.status).toBe(200)
    clock.now += 60_000
    // Another reader spends the one token there is.
    expect((await from(h, '198.51.100.2', search(2))).status).toBe(200)
    h.origin.resetHits()
    const stale = await from(h, '198.51.100.1', search(1))
    expect(stale.status).toBe(200)
    expect(stale.body).toBe(first.body)
    expect(stale.headers['cache-status']).toBe('cms-shield; hit; ttl=-50; detail=over-budget')
    expect(h.origin.hits.total).toBe(0)
    expect(metric(await scrape(h), 'cms_shield_stale_responses_total', { reason: 'over-budget' })).toBe(1)
  })

  it('never limits what the snapshot answers, nor hits and joined requests', async () => {
    const clock = { now: T0 }
    h = await start({ READ_THROUGH_RATE: '1', READ_THROUGH_BURST: '1', READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '1' }, clock)
    expect((await from(h, '198.51.100.1', search(1))).status).toBe(200)
    expect((await from(h, '198.51.100.1', search(2))).status).toBe(429)
    h.origin.resetHits()
    for (let round = 0; round < 3; round++) {
      for (const url of snapshotUrls(h)) expect([200, 302], url).toContain((await from(h, '198.51.100.1', url)).status)
      const hit = await from(h, '198.51.100.1', search(1))
      expect(hit.status).toBe(200)
      expect(hit.headers['cache-status']).toBe('cms-shield; hit')
    }
    expect(h.origin.hits.total).toBe(0)
  })

  it('takes the client from X-Forwarded-For only when the socket is a trusted proxy (TRUST_PROXY)', async () => {
    const clock = { now: T0 }
    h = await start({ READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '1', TRUST_PROXY: '10.0.0.0/8' }, clock)
    // Behind the balancer, two clients: a share each.
    expect((await from(h, '10.0.0.5', search(1), { 'x-forwarded-for': '198.51.100.1' })).status).toBe(200)
    expect((await from(h, '10.0.0.5', search(2), { 'x-forwarded-for': '198.51.100.2' })).status).toBe(200)
    expect((await from(h, '10.0.0.6', search(3), { 'x-forwarded-for': '198.51.100.1' })).status).toBe(429)
    // A client that writes its own X-Forwarded-For is still its socket.
    expect((await from(h, '203.0.113.5', search(4), { 'x-forwarded-for': '192.0.2.1' })).status).toBe(200)
    expect((await from(h, '203.0.113.5', search(5), { 'x-forwarded-for': '192.0.2.2' })).status).toBe(429)
  })

  it('says where the budget is kept and how much of it is in use in /readyz', async () => {
    h = await start({ READ_THROUGH_RATE: '5', READ_THROUGH_BURST: '7', READ_THROUGH_CONCURRENCY: '3' }, { now: T0 })
    await from(h, '198.51.100.1', search(1))
    const body = JSON.parse((await h.get('/readyz')).body) as { readThrough: Record<string, unknown> }
    expect(body.readThrough).toEqual({ scope: 'local', tokens: 6, concurrencyLimit: 3, inFlight: 0, queued: 0, clients: 1 })
  })

  it('keeps the sync and a PURGE moving while read-through requests hold every connection of their own pool', async () => {
    h = await startShield({ env: { ...UNLIMITED_READ_THROUGH, READ_THROUGH_CONCURRENCY: '2', READ_THROUGH_QUEUE_TIMEOUT: '0s', UPSTREAM_CONNECTIONS: '1', UPSTREAM_TIMEOUT: '3s' } })
    const origin = h.origin
    origin.setFault((request) => (request.query.has('search') ? { type: 'hang' } : undefined))
    let settled = 0
    const held = [1, 2].map((n) => h!.get(search(n)).finally(() => settled++))
    await new Promise((resolve) => setTimeout(resolve, 100))
    // Both places in flight are taken: the next miss is refused at once, not queued.
    const refused = await from(h, '198.51.100.9', search(3))
    expect(refused.status).toBe(503)

    const page = origin.pages().find((p) => p.parentId !== null)!
    origin.updatePage(page.id, { title: 'Retitled while read-through hangs' })
    const purge = await h.app.inject({ method: 'PURGE', url: `/api/v1/cms/pages/${page.id}/`, remoteAddress: '127.0.0.1' })
    expect(purge.statusCode).toBeLessThan(300)
    const result = await h.app.shield.sync.syncNow()
    expect(result.ok).toBe(true)
    const detail = JSON.parse((await h.get(`/api/v1/cms/pages/${page.id}/`)).body) as { title: string }
    expect(detail.title).toBe('Retitled while read-through hangs')
    // The sync finished while both read-through requests still hung.
    expect(settled).toBe(0)

    const samples = await scrape(h)
    expect(metric(samples, 'cms_shield_cms_requests_total', { class: 'sync' }) ?? 0).toBeGreaterThan(0)
    expect(metric(samples, 'cms_shield_cms_requests_total', { class: 'refresh' }) ?? 0).toBeGreaterThan(0)
    origin.setFault(() => undefined)
    await Promise.all(held)
    expect(metric(await scrape(h), 'cms_shield_cms_requests_total', { class: 'read_through' })).toBe(2)
  })
})
