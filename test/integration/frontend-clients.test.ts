/**
 * The site's own servers (FRONTEND_CLIENTS, FRONTEND_TOKEN) are one address for all their readers:
 * their misses skip the per-client share that would throttle a whole site's build, and still spend
 * the CMS budget, which bounds the CMS's load whoever asks.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, UNLIMITED_READ_THROUGH, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const TOKEN = 'frontend-token-0123456789'
const search = (n: number) => `/api/v1/cms/pages/?search=term${n}`

async function start(env: Record<string, string>): Promise<Harness> {
  return startShield({
    env: {
      ...UNLIMITED_READ_THROUGH, READ_THROUGH_ADAPTIVE: 'false', READ_THROUGH_QUEUE_TIMEOUT: '0s',
      READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '2', FRONTEND_CLIENTS: '10.1.0.0/16', FRONTEND_TOKEN: TOKEN, ...env,
    },
    // The clock stands still: no share and no budget refills during a test.
    deps: { now: () => 1_700_000_000_000 },
  })
}

async function statuses(harness: Harness, address: string, from: number, count: number, headers: Record<string, string> = {}): Promise<number[]> {
  const answers = []
  for (let n = from; n < from + count; n++) answers.push((await harness.app.inject({ method: 'GET', url: search(n), remoteAddress: address, headers })).statusCode)
  return answers
}

describe('the site\'s own servers', () => {
  it('are not held to a client\'s share, by address or by token, while anonymous clients are', async () => {
    h = await start({})
    h.origin.resetHits()
    expect(await statuses(h, '203.0.113.7', 0, 4)).toEqual([200, 200, 429, 429])
    expect(await statuses(h, '10.1.2.3', 10, 6)).toEqual([200, 200, 200, 200, 200, 200])
    expect(await statuses(h, '198.51.100.9', 20, 6, { 'x-frontend-token': TOKEN })).toEqual([200, 200, 200, 200, 200, 200])
    // A wrong token is an anonymous client.
    expect(await statuses(h, '198.51.100.10', 30, 4, { 'x-frontend-token': `${TOKEN}x` })).toEqual([200, 200, 429, 429])
    expect(h.origin.hits.total).toBe(2 + 6 + 6 + 2)
  })

  it('still spend the CMS budget: past it, 503 and no more CMS requests', async () => {
    h = await start({ READ_THROUGH_RATE: '1', READ_THROUGH_BURST: '3' })
    h.origin.resetHits()
    expect(await statuses(h, '10.1.2.3', 0, 5)).toEqual([200, 200, 200, 503, 503])
    expect(h.origin.hits.total).toBe(3)
  })

  it('are named through TRUST_PROXY: the forwarded client address counts, not the balancer\'s', async () => {
    h = await start({ TRUST_PROXY: '192.0.2.1/32' })
    expect(await statuses(h, '192.0.2.1', 0, 4, { 'x-forwarded-for': '10.1.9.9' })).toEqual([200, 200, 200, 200])
    expect(await statuses(h, '192.0.2.1', 10, 4, { 'x-forwarded-for': '203.0.113.50' })).toEqual([200, 200, 429, 429])
  })
})
