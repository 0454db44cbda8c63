import { MockAgent } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isProxyError, type ErrorCode } from '../errors.js'
import { createHttpClient, type HttpClientOptions } from './http-client.js'

const ORIGIN = 'http://cms.test'
const JSON_HEADERS = { 'content-type': 'application/json' }

let agent: MockAgent

function setup(overrides: Partial<HttpClientOptions> = {}) {
  agent = new MockAgent()
  agent.disableNetConnect()
  const sleeps: number[] = []
  const sleep = vi.fn(async (ms: number) => {
    sleeps.push(ms)
  })
  const client = createHttpClient({
    baseUrl: `${ORIGIN}/cms/`,
    dispatcher: agent,
    connections: 1,
    timeoutMs: 1_000,
    retries: 2,
    maxBodyBytes: 1_024,
    random: () => 0.5,
    sleep,
    ...overrides,
  })
  return { cms: agent.get(ORIGIN), client, sleeps, sleep }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

async function expectCode(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  const error = await rejection(promise)
  expect(isProxyError(error, code), String(error)).toBe(true)
}

afterEach(async () => {
  await agent.close()
})

describe('createHttpClient: retries', () => {
  it('retries a 503 with jittered backoff and returns the success', async () => {
    const { cms, client, sleeps } = setup()
    let attempts = 0
    cms.intercept({ path: '/cms/api/v1/cms/pages/', method: 'GET' }).reply(() => {
      attempts++
      return attempts < 3 ? { statusCode: 503, data: 'busy' } : { statusCode: 200, data: '{"ok":true}', responseOptions: { headers: JSON_HEADERS } }
    }).times(3)

    const response = await client.get('/api/v1/cms/pages/')

    expect(response.status).toBe(200)
    expect(response.text()).toBe('{"ok":true}')
    expect(attempts).toBe(3)
    // random() = 0.5 of ceilings 100 and 200 ms.
    expect(sleeps).toEqual([50, 100])
  })

  it('keeps every backoff within its full-jitter ceiling', async () => {
    const { cms, client, sleeps } = setup({ retries: 6, random: () => 0.999 })
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(502, 'bad gateway').times(7)

    const response = await client.get('/x')

    expect(response.status).toBe(502)
    expect(sleeps).toHaveLength(6)
    sleeps.forEach((ms, attempt) => expect(ms).toBeLessThan(Math.min(2_000, 100 * 2 ** attempt)))
  })

  it('returns the last 503 when retries run out', async () => {
    const { cms, client, sleeps } = setup({ retries: 1 })
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(503, 'busy').times(2)

    const response = await client.get('/x')

    expect(response.status).toBe(503)
    expect(response.text()).toBe('busy')
    expect(sleeps).toHaveLength(1)
  })

  it.each([404, 500, 400])('does not retry a %i', async (status) => {
    const { cms, client, sleep } = setup()
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(status, '{"message":"no"}', { headers: JSON_HEADERS })

    const response = await client.get('/x')

    expect(response.status).toBe(status)
    expect(response.contentType).toBe('application/json')
    expect(sleep).not.toHaveBeenCalled()
    agent.assertNoPendingInterceptors()
  })

  it('retries a network error and then succeeds', async () => {
    const { cms, client, sleeps } = setup()
    cms.intercept({ path: '/cms/x', method: 'GET' }).replyWithError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(200, 'fine')

    const response = await client.get('/x')

    expect(response.status).toBe(200)
    expect(sleeps).toEqual([50])
  })

  it('throws UPSTREAM_UNAVAILABLE once network errors outlast the retries', async () => {
    const warn = vi.fn()
    const { cms, client, sleeps } = setup({ logger: { debug: vi.fn(), warn } })
    cms.intercept({ path: '/cms/x', method: 'GET' }).replyWithError(new Error('connect ECONNREFUSED')).times(3)

    await expectCode(client.get('/x'), 'UPSTREAM_UNAVAILABLE')
    expect(sleeps).toHaveLength(2)
    expect(warn).toHaveBeenCalledOnce()
  })

  it('honours a small Retry-After on 429', async () => {
    const { cms, client, sleeps } = setup()
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(429, 'slow down', { headers: { 'retry-after': '1' } })
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(200, 'fine')

    expect((await client.get('/x')).status).toBe(200)
    expect(sleeps).toEqual([1_000])
  })

  it('returns a 429 whose Retry-After is too long to wait for', async () => {
    const { cms, client, sleep } = setup()
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(429, 'later', { headers: { 'retry-after': '3600' } })

    const response = await client.get('/x')

    expect(response.status).toBe(429)
    expect(response.headers['retry-after']).toBe('3600')
    expect(sleep).not.toHaveBeenCalled()
  })

  it('never retries with retries = 0', async () => {
    const { cms, client, sleep } = setup({ retries: 0 })
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(503, 'busy')

    expect((await client.get('/x')).status).toBe(503)
    expect(sleep).not.toHaveBeenCalled()
  })
})

describe('createHttpClient: limits', () => {
  it('throws UPSTREAM_TIMEOUT when the CMS does not answer in time', async () => {
    const { cms, client } = setup({ timeoutMs: 30, retries: 0 })
    cms.intercept({ path: '/cms/slow', method: 'GET' }).reply(200, 'late').delay(2_000)

    await expectCode(client.get('/slow'), 'UPSTREAM_TIMEOUT')
  })

  it('retries a timeout like a network error', async () => {
    const { cms, client, sleeps } = setup({ timeoutMs: 30, retries: 1 })
    cms.intercept({ path: '/cms/slow', method: 'GET' }).reply(200, 'late').delay(2_000)
    cms.intercept({ path: '/cms/slow', method: 'GET' }).reply(200, 'on time')

    expect((await client.get('/slow')).text()).toBe('on time')
    expect(sleeps).toEqual([50])
  })

  it('refuses a body whose Content-Length is over the cap, without retrying', async () => {
    const { cms, client, sleep } = setup({ maxBodyBytes: 10 })
    cms.intercept({ path: '/cms/big', method: 'GET' }).reply(200, 'x'.repeat(11), { headers: { 'content-length': '11' } })

    await expectCode(client.get('/big'), 'UPSTREAM_BODY_TOO_LARGE')
    expect(sleep).not.toHaveBeenCalled()
  })

  it('counts streamed bytes when there is no Content-Length', async () => {
    const { cms, client } = setup({ maxBodyBytes: 10 })
    cms.intercept({ path: '/cms/big', method: 'GET' }).reply(200, 'x'.repeat(11))

    await expectCode(client.get('/big'), 'UPSTREAM_BODY_TOO_LARGE')
  })

  it('accepts a body of exactly the cap', async () => {
    const { cms, client } = setup({ maxBodyBytes: 10 })
    cms.intercept({ path: '/cms/ok', method: 'GET' }).reply(200, 'x'.repeat(10), { headers: { 'content-length': '10' } })

    expect((await client.get('/ok')).body).toHaveLength(10)
  })
})

describe('createHttpClient: what it sends and follows', () => {
  it('sends only accept and user-agent, never a Cookie or Authorization', async () => {
    const { cms, client } = setup({ userAgent: 'cms-shield/test' })
    let seen: Record<string, string> = {}
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply((request) => {
      seen = Object.fromEntries(Object.entries(request.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]))
      return { statusCode: 200, data: '' }
    })

    await client.get('/x', { accept: 'application/json; indent=0' })

    expect(seen).toEqual({ accept: 'application/json; indent=0', 'user-agent': 'cms-shield/test' })
    expect(seen).not.toHaveProperty('cookie')
    expect(seen).not.toHaveProperty('authorization')
  })

  it('does not follow a redirect: find answers 302 and the caller needs its Location', async () => {
    const { cms, client } = setup()
    cms.intercept({ path: '/cms/api/v1/cms/pages/find/?html_path=a', method: 'GET' })
      .reply(302, '', { headers: { location: 'http://cms.test/api/v1/cms/pages/4/' } })

    const response = await client.get('/api/v1/cms/pages/find/?html_path=a')

    expect(response.status).toBe(302)
    expect(response.headers.location).toBe('http://cms.test/api/v1/cms/pages/4/')
    agent.assertNoPendingInterceptors()
  })

  it('refuses a path that does not start with "/"', async () => {
    const { client } = setup()
    await expect(client.get('x')).rejects.toThrow(TypeError)
  })
})

describe('createHttpClient: abort', () => {
  it('stops retrying when the signal aborts during the backoff', async () => {
    const controller = new AbortController()
    const reason = new Error('shutting down')
    let attempts = 0
    const { cms, client } = setup({
      sleep: async () => {
        controller.abort(reason)
        throw new Error('sleep interrupted')
      },
    })
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(() => {
      attempts++
      return { statusCode: 503, data: '' }
    }).persist()

    expect(await rejection(client.get('/x', { signal: controller.signal }))).toBe(reason)
    expect(attempts).toBe(1)
  })

  it('rejects with the abort reason, not a timeout, when aborted in flight', async () => {
    const controller = new AbortController()
    const { cms, client, sleep } = setup({ timeoutMs: 5_000 })
    cms.intercept({ path: '/cms/slow', method: 'GET' }).reply(200, 'late').delay(2_000)

    const pending = client.get('/slow', { signal: controller.signal })
    setTimeout(() => controller.abort(new Error('client went away')), 10)

    expect(await rejection(pending)).toMatchObject({ message: 'client went away' })
    expect(sleep).not.toHaveBeenCalled()
  })

  it('sends nothing when the signal is already aborted', async () => {
    const { client } = setup()
    const reason = new Error('already')
    expect(await rejection(client.get('/x', { signal: AbortSignal.abort(reason) }))).toBe(reason)
  })
})

describe('close', () => {
  it('leaves an injected dispatcher open', async () => {
    const { cms, client } = setup()
    await client.close()
    cms.intercept({ path: '/cms/x', method: 'GET' }).reply(200, 'still open')
    expect((await client.get('/x')).text()).toBe('still open')
  })
})
