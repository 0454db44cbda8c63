import { connect } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { request as undiciRequest } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { probeTree } from '../../../test/helpers/make-snapshot.js'
import { parseCidrList, type AddressList } from '../../config/cidr.js'
import { buildSnapshot, carryOver } from '../../tree/build-snapshot.js'
import type { Snapshot } from '../../tree/snapshot.js'
import type { RefreshRequest } from '../../sync/refresh-request.js'
import { createPurgeAccess } from '../purge-access.js'
import { registerPurgeRoute, type PurgeRouteOptions } from './purge.js'

const TOKEN = 'purge-token-for-tests'

function list(text: string): AddressList {
  const parsed = parseCidrList(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.list
}

/** The probes' tree (3 Home › 4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias) with real html_urls. */
function siteTree(): Snapshot {
  const base = probeTree()
  const path = (id: number): string => {
    const record = base.byId.get(id)!
    return record.parentId === null ? '/' : `${path(record.parentId)}${record.slug}/`
  }
  return buildSnapshot(
    base.pages.slice().map((record) => {
      // The digest describes the old listing item: drop it with the item.
      const { digest: _stale, ...page } = carryOver(record)
      const listItem = JSON.stringify({ id: record.id, meta: { type: record.type, detail_url: `http://localhost/api/v1/cms/pages/${record.id}/`, html_url: `http://localhost${path(record.id)}`, slug: record.slug }, title: record.title })
      return { ...page, listItem }
    }),
    { version: 1, syncedAt: 0, dialect: base.dialect },
  )
}

interface Recorder {
  readonly refreshes: RefreshRequest[]
  readonly purges: Array<[string, string]>
  readonly logs: Array<[level: string, details: object, message: string]>
}

type Order = 'purge first' | 'API routes first' | 'PURGE added as a method before the API routes'

interface TestAppOptions {
  allow?: string
  token?: string
  snapshot?: Snapshot | undefined
  order?: Order
  requestRefresh?: PurgeRouteOptions['requestRefresh']
}

/** A small app set up the way `app.ts` is: bodies dropped, the API's `app.all` routes, DRF's 405 for unknown methods. */
function buildTestApp(options: TestAppOptions = {}): { app: FastifyInstance; recorder: Recorder } {
  const recorder: Recorder = { refreshes: [], purges: [], logs: [] }
  const app = Fastify({ logger: false })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))

  const snapshot = 'snapshot' in options ? options.snapshot : siteTree()
  const log = (level: string) => (details: object, message: string) => void recorder.logs.push([level, details, message])
  const registerPurge = () =>
    registerPurgeRoute(app, {
      snapshot: () => snapshot,
      requestRefresh: options.requestRefresh ?? ((request) => void recorder.refreshes.push(request)),
      access: createPurgeAccess({ allow: list(options.allow ?? '127.0.0.1/32,::1/128'), token: options.token }),
      logger: { info: log('info'), warn: log('warn'), error: log('error') },
      onPurge: (result, target) => void recorder.purges.push([result, target]),
    })
  const registerApi = () => {
    const drf405 = (method: string) => ({ detail: `Method "${method}" not allowed.` })
    app.all('/api/v1/cms/pages/', (request, reply) => reply.code(405).send(drf405(request.method)))
    app.all('/api/v1/cms/pages/*', (request, reply) => reply.code(405).send(drf405(request.method)))
  }

  const order = options.order ?? 'purge first'
  if (order === 'PURGE added as a method before the API routes') app.addHttpMethod('PURGE')
  if (order === 'API routes first') {
    registerApi()
    registerPurge()
  } else {
    registerPurge()
    registerApi()
  }
  app.setNotFoundHandler((request, reply) => {
    if (request.url.startsWith('/api/')) return reply.code(405).send({ detail: `Method "${request.method}" not allowed.` })
    return reply.code(404).type('text/html').send('<h1>Not Found</h1>')
  })
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

const orders: Order[] = ['purge first', 'API routes first', 'PURGE added as a method before the API routes']

describe.each(orders)('PURGE on API paths is not swallowed by the API routes (%s)', (order) => {
  it('refreshes the page named by an API detail path and answers 200', async () => {
    const { app, recorder } = track(buildTestApp({ order }))
    const response = await app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/4/', headers: { host: 'api.example.com:8443' } })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ status: 'ok', target: 'page', id: 4 })
    expect(recorder.refreshes).toEqual([{ ids: [4], reason: 'purge' }])
  })

  it('runs a listing pass for the listing and find/', async () => {
    const { app, recorder } = track(buildTestApp({ order }))
    for (const url of ['/api/v1/cms/pages/', '/api/v1/cms/pages/find/?html_path=/blog-one/']) {
      const response = await app.inject({ method: 'PURGE', url })
      expect(response.statusCode, url).toBe(200)
      expect(response.json(), url).toEqual({ status: 'ok', target: 'listing' })
    }
    expect(recorder.refreshes).toEqual([
      { listing: true, reason: 'purge' },
      { listing: true, reason: 'purge' },
    ])
  })

  it('leaves the API answering other methods as before', async () => {
    const { app, recorder } = track(buildTestApp({ order }))
    expect((await app.inject({ method: 'DELETE', url: '/api/v1/cms/pages/4/' })).statusCode).toBe(405)
    expect((await app.inject({ method: 'GET', url: '/api/v1/cms/pages/4/' })).json()).toEqual({ detail: 'Method "GET" not allowed.' })
    expect((await app.inject({ method: 'PROPFIND', url: '/api/v1/cms/pages/4/' })).statusCode).toBe(405)
    expect((await app.inject({ method: 'GET', url: '/blog-one/' })).statusCode).toBe(404)
    expect(recorder.refreshes).toEqual([])
  })
})

describe('PURGE of page URLs', () => {
  it('refreshes the page whose html_url matches Host and path', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await app.inject({ method: 'PURGE', url: '/blog-one/child/', headers: { host: 'localhost' } })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toMatch(/^application\/json/)
    expect(response.headers['cache-control']).toBe('no-store')
    expect(response.json()).toEqual({ status: 'ok', target: 'page', id: 6 })
    expect(recorder.refreshes).toEqual([{ ids: [6], reason: 'purge' }])
    expect(recorder.purges).toEqual([['accepted', 'page']])
  })

  it('runs a listing pass for a URL that is no known page (a new page, or an index)', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await app.inject({ method: 'PURGE', url: '/not-yet-synced/', headers: { host: 'localhost' } })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ status: 'ok', target: 'unknown' })
    expect(recorder.refreshes).toEqual([{ listing: true, reason: 'purge' }])
    expect(recorder.purges).toEqual([['accepted', 'unknown']])
  })

  it('before the first snapshot, still reads ids from API paths and sends page URLs to the listing', async () => {
    const { app, recorder } = track(buildTestApp({ snapshot: undefined }))
    expect((await app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/4/' })).json()).toEqual({ status: 'ok', target: 'page', id: 4 })
    expect((await app.inject({ method: 'PURGE', url: '/blog-one/', headers: { host: 'localhost' } })).json()).toEqual({ status: 'ok', target: 'unknown' })
    expect(recorder.refreshes).toEqual([
      { ids: [4], reason: 'purge' },
      { listing: true, reason: 'purge' },
    ])
  })

  it('ignores a request body, whatever its Content-Type', async () => {
    const { app, recorder } = track(buildTestApp())
    const response = await app.inject({ method: 'PURGE', url: '/alpha/', headers: { host: 'localhost', 'content-type': 'application/json' }, payload: '{"ids": [99]}' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ status: 'ok', target: 'page', id: 5 })
    expect(recorder.refreshes).toEqual([{ ids: [5], reason: 'purge' }])
  })

  it('answers 500 and logs when the refresh cannot be requested', async () => {
    const { app, recorder } = track(buildTestApp({ requestRefresh: () => { throw new Error('sync stopped') } }))
    const response = await app.inject({ method: 'PURGE', url: '/alpha/', headers: { host: 'localhost' } })
    expect(response.statusCode).toBe(500)
    expect(response.json()).toEqual({ message: 'the refresh could not be requested' })
    expect(recorder.logs.filter(([level]) => level === 'error')).toHaveLength(1)
  })
})

describe('PURGE access', () => {
  it('refuses a source outside PURGE_ALLOW with 403 and requests nothing', async () => {
    const { app, recorder } = track(buildTestApp({ allow: '127.0.0.1/32' }))
    const response = await app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/4/', remoteAddress: '203.0.113.7' })
    expect(response.statusCode).toBe(403)
    expect(response.json()).toEqual({ message: 'PURGE not allowed from this address' })
    expect(recorder.refreshes).toEqual([])
    expect(recorder.purges).toEqual([['refused', 'page']])
    expect(recorder.logs.map(([level, details]) => [level, (details as { remoteAddress?: string }).remoteAddress])).toEqual([['warn', '203.0.113.7']])
  })

  it('never trusts forwarded headers for the source address', async () => {
    const { app, recorder } = track(buildTestApp({ allow: '127.0.0.1/32' }))
    const response = await app.inject({
      method: 'PURGE',
      url: '/api/v1/cms/pages/4/',
      remoteAddress: '203.0.113.7',
      headers: { 'x-forwarded-for': '127.0.0.1', 'x-real-ip': '127.0.0.1', forwarded: 'for=127.0.0.1' },
    })
    expect(response.statusCode).toBe(403)
    expect(recorder.refreshes).toEqual([])
  })

  it('lets any source in with the right X-Purge-Token, and not with a wrong one', async () => {
    const { app, recorder } = track(buildTestApp({ allow: 'none', token: TOKEN }))
    const wrong = await app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/4/', remoteAddress: '203.0.113.7', headers: { 'x-purge-token': 'nope' } })
    expect(wrong.statusCode).toBe(403)
    expect(recorder.refreshes).toEqual([])
    const right = await app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/4/', remoteAddress: '203.0.113.7', headers: { 'x-purge-token': TOKEN } })
    expect(right.statusCode).toBe(200)
    expect(recorder.refreshes).toEqual([{ ids: [4], reason: 'purge' }])
  })
})

describe('PURGE over a real socket', () => {
  async function listen(options: TestAppOptions) {
    const built = track(buildTestApp(options))
    await built.app.listen({ port: 0, host: '127.0.0.1' })
    const address = built.app.server.address()
    if (address === null || typeof address === 'string') throw new Error('expected a TCP address')
    return { ...built, port: address.port }
  }

  it('allows by the socket address: 127.0.0.1 is in the default PURGE_ALLOW', async () => {
    const { port, recorder } = await listen({})
    const response = await undiciRequest(`http://127.0.0.1:${port}/api/v1/cms/pages/6/`, { method: 'PURGE' })
    expect(response.statusCode).toBe(200)
    expect(await response.body.json()).toEqual({ status: 'ok', target: 'page', id: 6 })
    expect(recorder.refreshes).toEqual([{ ids: [6], reason: 'purge' }])
  })

  it('refuses 127.0.0.1 when PURGE_ALLOW excludes it, unless the token is sent', async () => {
    const { port, recorder } = await listen({ allow: '10.0.0.0/8', token: TOKEN })
    const refused = await undiciRequest(`http://127.0.0.1:${port}/blog-one/`, { method: 'PURGE', headers: { host: 'localhost', 'x-forwarded-for': '10.1.2.3' } })
    expect(refused.statusCode).toBe(403)
    expect(await refused.body.json()).toEqual({ message: 'PURGE not allowed from this address' })
    expect(recorder.refreshes).toEqual([])

    const allowed = await undiciRequest(`http://127.0.0.1:${port}/blog-one/`, { method: 'PURGE', headers: { host: 'localhost', 'x-purge-token': TOKEN } })
    expect(allowed.statusCode).toBe(200)
    expect(await allowed.body.json()).toEqual({ status: 'ok', target: 'page', id: 4 })
    expect(recorder.refreshes).toEqual([{ ids: [4], reason: 'purge' }])
  })

  it.each(orders)('answers the exact request Wagtail 7.4.3 sends with 200, promptly (%s)', async (order) => {
    const { port, recorder } = await listen({ order })
    // Byte for byte what urllib sends for HTTPBackend (docs/wagtail-compatibility.md#wire-format): no body, Connection: close.
    const wire = [
      'PURGE /blog-one/ HTTP/1.1',
      'Accept-Encoding: identity',
      'Host: localhost',
      'User-Agent: Wagtail-frontendcache/7.4.3',
      'Connection: close',
      '',
      '',
    ].join('\r\n')
    const started = performance.now()
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(wire))
      const chunks: Buffer[] = []
      socket.on('data', (chunk: Buffer) => chunks.push(chunk))
      socket.on('error', reject)
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
      socket.setTimeout(2000, () => socket.destroy(new Error('no answer within 2 s')))
    })
    expect(performance.now() - started).toBeLessThan(1000)
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(answer).toMatch(/\r\nconnection: close\r\n/i)
    expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe('{"status":"ok","target":"page","id":4}')
    expect(recorder.refreshes).toEqual([{ ids: [4], reason: 'purge' }])
  })
})
