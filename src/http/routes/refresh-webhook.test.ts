import { Readable } from 'node:stream'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { request as undiciRequest } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import type { RefreshRequest } from '../../sync/refresh-request.js'
import { MAX_REFRESH_IDS, parseRefreshBody, REFRESH_BODY_LIMIT, registerRefreshWebhook, type RefreshWebhookOptions } from './refresh-webhook.js'

const TOKEN = 'refresh-token-for-tests-0123456789'
const AUTH = { authorization: `Bearer ${TOKEN}` }

interface Recorder {
  readonly refreshes: RefreshRequest[]
  readonly results: string[]
}

/** A small app set up the way `app.ts` is: every content-type parser replaced by one that drops bodies. */
function buildTestApp(overrides: Partial<RefreshWebhookOptions> = {}): { app: FastifyInstance; recorder: Recorder } {
  const recorder: Recorder = { refreshes: [], results: [] }
  const app = Fastify({ logger: false })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))
  registerRefreshWebhook(app, {
    token: TOKEN,
    requestRefresh: (request) => void recorder.refreshes.push(request),
    logger: { info() {}, warn() {}, error() {} },
    onWebhook: (result) => void recorder.results.push(result),
    ...overrides,
  })
  // Outside the webhook's plugin bodies are still dropped.
  app.post('/elsewhere', async (request) => ({ body: request.body ?? null }))
  return { app, recorder }
}

const apps: FastifyInstance[] = []
function track(built: ReturnType<typeof buildTestApp>) {
  apps.push(built.app)
  return built
}
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

function post(app: FastifyInstance, payload: string | Buffer | undefined, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/-/refresh', headers: { ...AUTH, ...headers }, ...(payload === undefined ? {} : { payload }) })
}

describe('POST /-/refresh: accepted requests', () => {
  it('requests the given pages plus a listing pass, duplicates removed, and answers 202', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, '{"ids": [5, 3, 5, 9]}', { 'content-type': 'application/json' })
    expect(response.statusCode).toBe(202)
    expect(response.headers['cache-control']).toBe('no-store')
    expect(response.json()).toEqual({ status: 'accepted', ids: [5, 3, 9] })
    expect(recorder.refreshes).toEqual([{ ids: [5, 3, 9], listing: true, reason: 'webhook' }])
    expect(recorder.results).toEqual(['accepted'])
  })

  it('requests a full re-sync for {"all": true}', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, ' {"all": true}\n', { 'content-type': 'application/json' })
    expect(response.statusCode).toBe(202)
    expect(response.json()).toEqual({ status: 'accepted', all: true })
    expect(recorder.refreshes).toEqual([{ all: true, reason: 'webhook' }])
  })

  it.each([
    ['no Content-Type', undefined],
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['JSON with a charset', 'application/json; charset=utf-8'],
    ['an exotic type', 'application/vnd.cms-shield+json'],
  ])('reads the raw body whatever the Content-Type (%s)', async (_name, contentType) => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, '{"ids": [4]}', contentType === undefined ? {} : { 'content-type': contentType })
    expect(response.statusCode).toBe(202)
    expect(recorder.refreshes).toEqual([{ ids: [4], listing: true, reason: 'webhook' }])
  })

  it('accepts the Bearer scheme in any case', async () => {
    const { app } = track(buildTestApp())
    expect((await post(app, '{"all": true}', { authorization: `bEaReR  ${TOKEN}` })).statusCode).toBe(202)
  })

  it('leaves the rest of the app dropping bodies', async () => {
    const { app } = track(buildTestApp())
    const response = await app.inject({ method: 'POST', url: '/elsewhere', headers: { 'content-type': 'application/json' }, payload: '{"ids": [1]}' })
    expect(response.json()).toEqual({ body: null })
  })

  it('works over a real socket with a chunked body', async () => {
    const { app, recorder } = track(buildTestApp())
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    if (address === null || typeof address === 'string') throw new Error('expected a TCP address')
    const body = Readable.from([Buffer.from('{"ids": [1, '), Buffer.from('2]}')])
    const response = await undiciRequest(`http://127.0.0.1:${address.port}/-/refresh`, { method: 'POST', headers: AUTH, body })
    expect(response.statusCode).toBe(202)
    expect(await response.body.json()).toEqual({ status: 'accepted', ids: [1, 2] })
    expect(recorder.refreshes).toEqual([{ ids: [1, 2], listing: true, reason: 'webhook' }])
  })
})

describe('POST /-/refresh: authorization', () => {
  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-token' }],
    ['a token with one character more', { authorization: `Bearer ${TOKEN}x` }],
    ['another scheme', { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }],
    ['the bare token', { authorization: TOKEN }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('answers 401 with WWW-Authenticate: Bearer for %s, and requests nothing', async (_name, headers) => {
    const { app, recorder } = track(buildTestApp())
    const response = await app.inject({ method: 'POST', url: '/-/refresh', headers: { 'content-type': 'application/json', ...headers }, payload: '{"all": true}' })
    expect(response.statusCode).toBe(401)
    expect(response.headers['www-authenticate']).toBe('Bearer')
    expect(response.json()).toEqual({ message: expect.stringMatching(/bearer|Bearer/) })
    expect(recorder.refreshes).toEqual([])
    expect(recorder.results).toEqual(['unauthorized'])
  })

  it('checks the token before reading the body: a bad or oversized body without it is still a 401', async () => {
    const { app, recorder } = track(buildTestApp())
    const garbage = await app.inject({ method: 'POST', url: '/-/refresh', payload: 'not json' })
    expect(garbage.statusCode).toBe(401)
    const huge = await app.inject({ method: 'POST', url: '/-/refresh', payload: Buffer.alloc(REFRESH_BODY_LIMIT * 4, 0x20) })
    expect(huge.statusCode).toBe(401)
    expect(recorder.results).toEqual(['unauthorized', 'unauthorized'])
  })

  it('refuses to register with an empty token', () => {
    expect(() => buildTestApp({ token: '' })).toThrow(/must not be empty/)
  })
})

describe('POST /-/refresh: bad requests', () => {
  it.each([
    ['an empty body', '', /^the body is empty/],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /^the body is not valid UTF-8$/],
    ['text that is not JSON', 'ids=1,2', /^the body is not valid JSON: Unexpected token/],
    ['truncated JSON', '{"ids": [1, 2', /^the body is not valid JSON: Unexpected end of JSON input/],
    ['an array', '[1, 2]', /^the body must be a JSON object, not an array/],
    ['a string', '"all"', /^the body must be a JSON object, not a string/],
    ['null', 'null', /^the body must be a JSON object, not null/],
    ['an empty object', '{}', /^the object is empty: send \{"ids": \[1, 2, 3\]\} or \{"all": true\}$/],
    ['an unknown key', '{"ids": [1], "force": true}', /^unknown key "force"/],
    ['a repeated key', '{"ids": [1], "ids": [2]}', /^the key "ids" appears more than once$/],
    ['both ids and all', '{"ids": [1], "all": true}', /^send either "ids" or "all", not both$/],
    ['all false', '{"all": false}', /^"all" must be true, not false$/],
    ['all as a string', '{"all": "yes"}', /^"all" must be true, not "yes"$/],
    ['ids not an array', '{"ids": 5}', /^"ids" must be an array of page ids, not 5$/],
    ['ids empty', '{"ids": []}', /^"ids" must not be empty/],
    ['a string id', '{"ids": [1, "2"]}', /^"ids"\[1\] must be a page id \(an integer from 1 to 9007199254740991\), not "2"$/],
    ['a fractional id', '{"ids": [1.5]}', /^"ids"\[0\] must be a page id .*, not 1\.5$/],
    ['an id written as a float', '{"ids": [1.0]}', /^"ids"\[0\] must be a page id .*, not 1\.0$/],
    ['an exponent', '{"ids": [1e3]}', /^"ids"\[0\] must be a page id .*, not 1e3$/],
    ['id zero', '{"ids": [0]}', /^"ids"\[0\] must be a page id .*, not 0$/],
    ['a negative id', '{"ids": [-4]}', /^"ids"\[0\] must be a page id .*, not -4$/],
    ['an id beyond 2^53 − 1', '{"ids": [9007199254740993]}', /^"ids"\[0\] must be a page id .*, not 9007199254740993$/],
    ['a nested array', '{"ids": [[1]]}', /^"ids"\[0\] must be a page id .*, not \[1\]$/],
    ['too many ids', JSON.stringify({ ids: Array.from({ length: MAX_REFRESH_IDS + 1 }, (_, i) => i + 1) }), /^"ids" has 10001 entries; at most 10000 are allowed/],
  ])('answers 400 with the reason for %s, and requests nothing', async (_name, payload, reason) => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, payload, { 'content-type': 'application/json' })
    expect(response.statusCode).toBe(400)
    expect(response.json().message).toMatch(reason)
    expect(recorder.refreshes).toEqual([])
    expect(recorder.results).toEqual(['bad-request'])
  })

  it('answers a POST with no body at all with 400', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, undefined)
    expect(response.statusCode).toBe(400)
    expect(response.json().message).toMatch(/^the body is empty/)
    expect(recorder.refreshes).toEqual([])
  })

  it('accepts exactly 10000 ids', async () => {
    const { app, recorder } = track(buildTestApp())
    const ids = Array.from({ length: MAX_REFRESH_IDS }, (_, i) => i + 1)
    const response = await post(app, JSON.stringify({ ids }))
    expect(response.statusCode).toBe(202)
    expect(recorder.refreshes).toEqual([{ ids, listing: true, reason: 'webhook' }])
  })

  it('answers 413 with a JSON message beyond 64 KB', async () => {
    const { app, recorder } = track(buildTestApp())
    const payload = `{"ids": [1]}${' '.repeat(REFRESH_BODY_LIMIT)}`
    const response = await post(app, payload, { 'content-type': 'application/json' })
    expect(response.statusCode).toBe(413)
    expect(response.json()).toEqual({ message: 'the body is larger than 65536 bytes' })
    expect(recorder.refreshes).toEqual([])
    expect(recorder.results).toEqual(['bad-request'])
  })

  it('answers 415 with a JSON message for a Content-Type that is not a media type', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await post(app, '{"all": true}', { 'content-type': 'json' })
    expect(response.statusCode).toBe(415)
    expect(response.json()).toEqual({ message: 'the Content-Type header is not a valid media type' })
    expect(recorder.refreshes).toEqual([])
  })

  it('answers 500 with a JSON message when the refresh cannot be requested', async () => {
    const { app } = track(buildTestApp({ requestRefresh: () => { throw new Error('sync stopped') } }))
    const response = await post(app, '{"all": true}')
    expect(response.statusCode).toBe(500)
    expect(response.json()).toEqual({ message: 'internal error' })
  })
})

describe('/-/refresh with other methods', () => {
  it.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const)('answers %s with 405 and Allow: POST, whatever the credentials', async (method) => {
    const { app, recorder } = track(buildTestApp())
    for (const headers of [{}, AUTH]) {
      const response = await app.inject({ method, url: '/-/refresh', headers, payload: method === 'GET' ? undefined : '{"all": true}' })
      expect(response.statusCode).toBe(405)
      expect(response.headers['allow']).toBe('POST')
      expect(response.json()).toEqual({ message: `method ${method} is not allowed on /-/refresh: use POST` })
    }
    expect(recorder.refreshes).toEqual([])
  })

  it('answers HEAD with 405 and Allow: POST too', async () => {
    const { app } = track(buildTestApp())
    const response = await app.inject({ method: 'HEAD', url: '/-/refresh' })
    expect(response.statusCode).toBe(405)
    expect(response.headers['allow']).toBe('POST')
  })
})

describe('parseRefreshBody', () => {
  it('drops a UTF-8 byte order mark (RFC 8259 §8.1)', () => {
    expect(parseRefreshBody(Buffer.from('\uFEFF{"all": true}', 'utf8'))).toEqual({ ok: true, body: { all: true } })
  })

  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)), fc.json().map((text) => Buffer.from(text))), (bytes) => {
        const result = parseRefreshBody(bytes)
        expect(typeof result.ok).toBe('boolean')
      }),
      { numRuns: 1000 },
    )
  })

  it('reads any list of page ids, keeping first occurrences in order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { minLength: 1, maxLength: 50 }), (ids) => {
        expect(parseRefreshBody(Buffer.from(JSON.stringify({ ids })))).toEqual({ ok: true, body: { ids: [...new Set(ids)] } })
      }),
    )
  })
})
