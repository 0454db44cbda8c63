/**
 * The differential test of the serving core's two writers: the fast path (raw `node:http`,
 * before Fastify routes) and the Fastify routes both write `serve()`'s result, and must write it
 * alike. Two instances over real sockets, one with FAST_PATH=false, get the same requests: status,
 * every header (but the per-request ones) and body bytes must match, and the fast instance must
 * really have answered them itself. Failures are compared too: a view that throws, one that
 * rejects, load shedding and an answer written while closing.
 */
import type { FastifyInstance } from 'fastify'
import { request } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { HttpAnswer } from '../../src/http/answers.js'
import type { PagesRequest, PagesService } from '../../src/http/pages-service.js'
import { PreparedServerResponse } from '../../src/http/prepared-headers.js'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

let origin: FakeWagtail
let fast: Harness
let slow: Harness
const base: Record<'fast' | 'slow', string> = { fast: '', slow: '' }

beforeAll(async () => {
  origin = await startFakeWagtail({ pages: generateSite() })
  fast = await startShield({ sharedOrigin: origin })
  slow = await startShield({ sharedOrigin: origin, env: { FAST_PATH: 'false' } })
  for (const [name, h] of [['fast', fast], ['slow', slow]] as const) {
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    base[name] = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`
  }
})
afterAll(async () => {
  await fast.close()
  await slow.close()
  await origin.close()
})

/** Headers that differ per request or per connection by nature. */
const PER_REQUEST = new Set(['date', 'x-request-id', 'age', 'keep-alive', 'connection'])

async function sendTo(origin: string, method: string, path: string, headers: Record<string, string>, perRequest = PER_REQUEST) {
  const response = await request(origin + path, { method: method as 'GET', headers })
  const body = Buffer.from(await response.body.arrayBuffer())
  const kept = Object.entries(response.headers).filter(([name]) => !perRequest.has(name))
  return { status: response.statusCode, headers: kept, body: body.toString('latin1'), requestId: response.headers['x-request-id'] }
}

const send = (which: 'fast' | 'slow', method: string, path: string, headers: Record<string, string>) => sendTo(base[which], method, path, headers)

/** Replaces the list view on both instances (the serving core reads the view at each request). */
const restores: Array<() => void> = []
function replaceList(make: (original: PagesService['list']) => PagesService['list']): void {
  for (const h of [fast, slow]) {
    const pages = h.app.shield.pages as { list: PagesService['list'] }
    const original = pages.list
    pages.list = make(original)
    restores.push(() => { pages.list = original })
  }
}
afterEach(() => {
  for (const restore of restores.splice(0)) restore()
})

/** The fast and the Fastify writer answer alike, and the fast one answered it itself. */
async function expectAlike(method: 'GET' | 'HEAD', path: string, headers: Record<string, string> = {}) {
  const before = fast.app.shield.fastPathAnswered()
  const fastAnswer = await send('fast', method, path, headers)
  const slowAnswer = await send('slow', method, path, headers)
  expect({ path, method, ...fastAnswer, requestId: undefined }).toEqual({ path, method, ...slowAnswer, requestId: undefined })
  expect(fast.app.shield.fastPathAnswered() - before).toBe(1)
  return fastAnswer
}

async function requestsCounted(app: FastifyInstance, labels: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`cms_shield_http_requests_total{${labels}}`))
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}

describe('the fast path', () => {
  it('answers every kind of API read exactly as Fastify does', async () => {
    const snapshot = fast.app.shield.sync.current!
    const root = snapshot.rootId
    const someId = snapshot.pages.at(7)!.id
    const etag = (await send('slow', 'GET', `/api/v1/cms/pages/${someId}/`, {})).headers.find(([n]) => n === 'etag')![1] as string
    const paths = [
      '/api/v1/cms/pages/',
      `/api/v1/cms/pages/?child_of=${root}&show_in_menus=true&limit=250`,
      '/api/v1/cms/pages/?type=cms.RedirectPage',
      '/api/v1/cms/pages/?limit=abc',
      '/api/v1/cms/pages/?offset=-1',
      '/api/v1/cms/pages/?child_of=999999',
      '/api/v1/cms/pages/?format=xml',
      `/api/v1/cms/pages/${someId}/`,
      `/api/v1/cms/pages/000${someId}/`,
      '/api/v1/cms/pages/999999/',
      `/api/v1/cms/pages/${someId}/?type=cms.Nope`,
      '/api/v1/cms/pages/find/?html_path=/',
      `/api/v1/cms/pages/find/?id=${someId}&fields=_,id`,
      '/api/v1/cms/pages/find/?html_path=/does/not/exist/',
      '/api/v1/cms/pages/?search=health',
      `/api/v1/cms/pages/${someId}/?fields=_,id`,
    ]
    const variants: Array<Record<string, string>> = [
      {},
      { accept: 'text/html' },
      { accept: 'application/xml' },
      { 'if-none-match': etag },
      { 'if-none-match': `W/${etag}, "other"` },
      { 'if-none-match': '*' },
    ]
    const before = fast.app.shield.fastPathAnswered()
    let compared = 0
    for (const path of paths) {
      for (const headers of variants) {
        for (const method of ['GET', 'HEAD'] as const) {
          // Read-through answers: ask the slow instance first so both serve from their caches.
          const slowAnswer = await send('slow', method, path, headers)
          await send('fast', method, path, headers)
          const fastAnswer = await send('fast', method, path, headers)
          const again = await send('slow', method, path, headers)
          expect({ path, method, sent: headers, ...fastAnswer, requestId: undefined }).toEqual({ path, method, sent: headers, ...again, requestId: undefined })
          // Hits carry no request id (REQUEST_ID_ON_HITS=false, the default) on either writer; the rest a fresh one.
          expect(fastAnswer.requestId === undefined).toBe(again.requestId === undefined)
          if (fastAnswer.requestId !== undefined) expect(fastAnswer.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
          expect(slowAnswer.status).toBe(again.status)
          compared++
        }
      }
    }
    expect(compared).toBe(paths.length * variants.length * 2)
    // Every one of the fast instance's reads above went through the fast path.
    expect(fast.app.shield.fastPathAnswered() - before).toBe(compared * 2)
    expect(slow.app.shield.fastPathAnswered()).toBe(0)
  })

  it('writes its answers\' headers as blocks prepared once, leaving framing and ids to Node', async () => {
    const blocks: string[] = []
    const store = PreparedServerResponse.prototype._storeHeader
    PreparedServerResponse.prototype._storeHeader = function (this: PreparedServerResponse, firstLine: string, headers: unknown) {
      blocks.push(`${firstLine}|${JSON.stringify(headers)}|${this.preparedLines ?? 'none'}`)
      store.call(this, firstLine, headers)
    }
    restores.push(() => { PreparedServerResponse.prototype._storeHeader = store })
    const someId = fast.app.shield.sync.current!.pages.at(2)!.id
    const hit = await send('fast', 'GET', `/api/v1/cms/pages/${someId}/`, {})
    const traced = await sendTo(base.fast, 'GET', `/api/v1/cms/pages/${someId}/`, { 'x-request-id': 'trace-9' }, new Set())
    expect(traced.headers).toContainEqual(['x-request-id', 'trace-9'])
    const length = String(Buffer.byteLength(hit.body, 'latin1'))
    // Node got only Content-Length (and the caller's id); the API's headers came prepared.
    expect(blocks).toHaveLength(2)
    expect(blocks[0]).toMatch(new RegExp(`^HTTP/1.1 200 OK\r\n\\|\\["content-length","${length}"\\]\\|content-type: application/json\r\n`))
    expect(blocks[1]).toContain(`|["x-request-id","trace-9","content-length","${length}"]|content-type: application/json\r\n`)
    expect(traced.headers.filter(([name]) => !PER_REQUEST.has(name))).toEqual(hit.headers)
  })

  it('leaves encoded paths, other methods and PURGE to Fastify', async () => {
    const before = fast.app.shield.fastPathAnswered()
    const encoded = await send('fast', 'GET', '/api/v1/cms/pages/%66ind/?id=2', {})
    expect(encoded.status).toBe((await send('slow', 'GET', '/api/v1/cms/pages/%66ind/?id=2', {})).status)
    const post = await request(`${base.fast}/api/v1/cms/pages/`, { method: 'POST', body: '{}' })
    expect(post.statusCode).toBe(405)
    await post.body.dump()
    const noSlash = await send('fast', 'GET', '/api/v1/cms/pages', {})
    expect(noSlash.status).toBe(301)
    expect(fast.app.shield.fastPathAnswered()).toBe(before)
  })

  it('honours the caller\'s request id, logs and counts each request as the Fastify path does', async () => {
    const response = await request(`${base.fast}/api/v1/cms/pages/?limit=1`, { headers: { 'x-request-id': 'trace-123' } })
    await response.body.dump()
    expect(response.headers['x-request-id']).toBe('trace-123')
    const metrics = await fast.app.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toMatch(/cms_shield_http_requests_total\{route="list",method="GET",status="200",cache="snapshot"\} [1-9]/)
  })

  it('answers the rest of the API the same: redirects, 404s under the prefix, OPTIONS, 405s, encoded spellings', async () => {
    const someId = fast.app.shield.sync.current!.pages.at(3)!.id
    for (const path of [`/api/v1/cms/pages/${someId}`, '/api/v1/cms/pages/find?html_path=/', '/api/v1/cms/pages/abc/', '/api/v1/cms/pages/1/2/']) {
      for (const method of ['GET', 'HEAD'] as const) await expectAlike(method, path)
    }
    // Fastify writes these on both instances; the fast instance's Fastify writer must still match.
    const others: Array<[string, string]> = [
      ['OPTIONS', '/api/v1/cms/pages/'], ['OPTIONS', '/api/v1/cms/pages/?format=xml'], ['POST', `/api/v1/cms/pages/${someId}/`],
      ['DELETE', '/api/v1/cms/pages/find/'], ['PROPFIND', '/api/v1/cms/pages/'], ['GET', '/api/v1/cms/pages'],
      ['GET', `/api/v1/cms/pages/%3${String(someId)[0]}${String(someId).slice(1)}/`], ['GET', '/api/v1/cms/%70ages/?limit=2'],
      ['GET', '/api/v1/cms/pages/%zz/'], ['GET', '/elsewhere/'],
    ]
    for (const [method, path] of others) {
      const a = await send('fast', method, path, {})
      const b = await send('slow', method, path, {})
      expect({ method, path, ...a, requestId: undefined }).toEqual({ method, path, ...b, requestId: undefined })
    }
    // A percent-encoded spelling goes to the Fastify writer of the same instance: same answer.
    const plain = await send('fast', 'GET', `/api/v1/cms/pages/${someId}/`, {})
    const encoded = await send('fast', 'GET', `/api/v1/cms/pages/%3${String(someId)[0]}${String(someId).slice(1)}/`, {})
    expect({ ...encoded, requestId: undefined }).toEqual({ ...plain, requestId: undefined })
  })

  it('turns a view that throws into the same proxy failure on both writers, logged and counted', async () => {
    replaceList(() => () => {
      throw new Error('a bug in the view')
    })
    const before = await requestsCounted(fast.app, 'route="list",method="GET",status="500",cache="none"')
    const answer = await expectAlike('GET', '/api/v1/cms/pages/?limit=4')
    expect(answer.status).toBe(500)
    expect(JSON.parse(answer.body)).toEqual({ message: 'internal error' })
    expect(answer.requestId).toBeDefined()
    expect(await requestsCounted(fast.app, 'route="list",method="GET",status="500",cache="none"')).toBe(before + 1)
  })

  it('turns a view that rejects into the same proxy failure on both writers, logged and counted', async () => {
    replaceList(() => () => Promise.reject(new Error('a failing read-through')))
    const before = await requestsCounted(fast.app, 'route="list",method="HEAD",status="500",cache="none"')
    for (const method of ['GET', 'HEAD'] as const) {
      const answer = await expectAlike(method, '/api/v1/cms/pages/?limit=5')
      expect(answer.status).toBe(500)
      expect(answer.headers).toContainEqual(['content-type', 'application/json'])
    }
    expect(await requestsCounted(fast.app, 'route="list",method="HEAD",status="500",cache="none"')).toBe(before + 1)
  })

  it('sheds load alike on both writers, and keeps the health routes up', async () => {
    const pressured: Array<[FastifyInstance, FastifyInstance['isUnderPressure']]> = []
    for (const h of [fast, slow]) {
      pressured.push([h.app, h.app.isUnderPressure])
      h.app.isUnderPressure = () => true
    }
    restores.push(() => {
      for (const [app, original] of pressured) app.isUnderPressure = original
    })
    const someId = fast.app.shield.sync.current!.pages.at(5)!.id
    for (const path of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${someId}/`, '/api/v1/cms/pages/nothing/']) {
      const answer = await expectAlike('GET', path)
      expect(answer.status).toBe(503)
      expect(answer.headers).toContainEqual(['retry-after', '1'])
    }
    expect((await send('fast', 'GET', '/healthz', {})).status).toBe(200)
  })
})

/** Two instances with `env`, the second with FAST_PATH=false, listening; their URLs in the same order. */
async function listeningPair(env: Record<string, string>): Promise<{ pair: Harness[]; urls: string[] }> {
  const pair = [await startShield({ sharedOrigin: origin, env }), await startShield({ sharedOrigin: origin, env: { ...env, FAST_PATH: 'false' } })]
  const urls: string[] = []
  for (const h of pair) {
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    urls.push(`http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`)
  }
  return { pair, urls }
}

describe('with every optional header on', () => {
  it('writes Cache-Tag beside Surrogate-Key, Cache-Status and a request id on hits alike on both writers', async () => {
    const env = { CACHE_TAG_HEADERS: 'surrogate-key,cache-tag', CACHE_STATUS_HEADER: 'true', REQUEST_ID_ON_HITS: 'true' }
    const { pair, urls } = await listeningPair(env)
    try {
      const someId = pair[0]!.app.shield.sync.current!.pages.at(5)!.id
      for (const path of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${someId}/`]) {
        const [a, b] = [await sendTo(urls[0]!, 'GET', path, {}), await sendTo(urls[1]!, 'GET', path, {})]
        expect({ ...a, requestId: undefined }).toEqual({ ...b, requestId: undefined })
        expect(a.requestId).toMatch(/^[0-9a-f-]{36}$/)
        expect(b.requestId).toMatch(/^[0-9a-f-]{36}$/)
        expect(a.headers.map(([name]) => name)).toEqual(expect.arrayContaining(['surrogate-key', 'cache-tag', 'cache-status']))
      }
      expect(pair[0]!.app.shield.fastPathAnswered()).toBe(2)
    } finally {
      for (const h of pair) await h.close()
    }
  })

  it('writes none of them when they are all off, alike on both writers', async () => {
    const env = { CACHE_TAG_HEADERS: 'none', CACHE_STATUS_HEADER: 'false', REQUEST_ID_ON_HITS: 'false' }
    const { pair, urls } = await listeningPair(env)
    try {
      const someId = pair[0]!.app.shield.sync.current!.pages.at(5)!.id
      for (const path of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${someId}/`]) {
        // Everything compared, the request id's absence included.
        const perRequest = new Set(['date', 'keep-alive', 'connection'])
        const [a, b] = [await sendTo(urls[0]!, 'GET', path, {}, perRequest), await sendTo(urls[1]!, 'GET', path, {}, perRequest)]
        expect(a).toEqual(b)
        expect(a.headers.map(([name]) => name).sort()).toEqual(['allow', 'cache-control', 'content-length', 'content-type', 'etag', 'vary'])
      }
    } finally {
      for (const h of pair) await h.close()
    }
  })
})

describe('while closing', () => {
  /** A list read that waits for `release` before answering, on its own instance. */
  async function holdOneRead(h: Harness): Promise<{ answered: Promise<Awaited<ReturnType<typeof sendTo>>>; release: () => void; origin: string }> {
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    const originUrl = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`
    const pages = h.app.shield.pages as { list: PagesService['list'] }
    const original = pages.list
    let release!: () => void
    let called!: () => void
    const viewCalled = new Promise<void>((resolve) => (called = resolve))
    const gate = new Promise<void>((resolve) => (release = resolve))
    pages.list = (input: PagesRequest): Promise<HttpAnswer> => {
      called()
      return gate.then(() => original(input))
    }
    const answered = sendTo(originUrl, 'GET', '/api/v1/cms/pages/?limit=3', {}, new Set(['date', 'x-request-id', 'keep-alive']))
    await viewCalled
    return { answered, release, origin: originUrl }
  }

  it('writes the answer in flight with Connection: close on both writers, alike', async () => {
    const answers = []
    for (const env of [{}, { FAST_PATH: 'false' }] as Array<Record<string, string>>) {
      const h = await startShield({ sharedOrigin: origin, env })
      const held = await holdOneRead(h)
      const closed = h.app.close()
      // preClose has run once close() has yielded; the held read is still in flight.
      await new Promise((resolve) => setTimeout(resolve, 50))
      held.release()
      answers.push({ ...(await held.answered), requestId: undefined })
      await closed
      expect(h.app.shield.fastPathAnswered()).toBe(env['FAST_PATH'] === undefined ? 1 : 0)
    }
    expect(answers[0]!.status).toBe(200)
    expect(answers[0]!.headers).toContainEqual(['connection', 'close'])
    expect(answers[0]).toEqual(answers[1])
  })
})

describe('refusals by the read-through budget', () => {
  it("write a client's 429, built once and reused, exactly as Fastify does", async () => {
    // A share of one miss, spent by the first and never refilled (the clock stands still);
    // refusals answered at once (no hold).
    const budget = { READ_THROUGH_CLIENT_RATE: '1', READ_THROUGH_CLIENT_BURST: '1', READ_THROUGH_QUEUE_TIMEOUT: '0s' }
    const deps = { now: () => 1_700_000_000_000 }
    const writers = {
      fast: await startShield({ sharedOrigin: origin, env: budget, deps }),
      slow: await startShield({ sharedOrigin: origin, env: { ...budget, FAST_PATH: 'false' }, deps }),
    }
    try {
      const urls: Record<string, string> = {}
      for (const [name, h] of Object.entries(writers)) {
        await h.app.listen({ port: 0, host: '127.0.0.1' })
        urls[name] = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`
      }
      const run = Date.now().toString(36)
      const answers: Record<string, Array<Awaited<ReturnType<typeof sendTo>>>> = { fast: [], slow: [] }
      for (const name of ['fast', 'slow']) {
        for (const n of [0, 1, 2]) answers[name]!.push(await sendTo(urls[name]!, 'GET', `/api/v1/cms/pages/?search=refused-${run}-${n}`, {}))
      }
      expect(answers['fast']!.map((answer) => answer.status)).toEqual([200, 429, 429])
      // The second refusal reuses the first's answer, and the fast path's header list for it.
      expect(answers['fast']!.map((answer) => ({ ...answer, requestId: undefined }))).toEqual(answers['slow']!.map((answer) => ({ ...answer, requestId: undefined })))
      expect(writers.fast.app.shield.fastPathAnswered()).toBe(3)
      const refused = answers['fast']![2]!
      expect(refused.headers).toContainEqual(['retry-after', '1'])
      expect(JSON.parse(refused.body)).toEqual({ message: 'too many requests that only the CMS can answer; slow down' })
    } finally {
      await writers.fast.close()
      await writers.slow.close()
    }
  })
})
