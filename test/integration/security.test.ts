/**
 * Security: what a hostile client can send must neither reach the CMS nor change what
 * other readers get. Builds on purge.test.ts (PURGE from outside PURGE_ALLOW, wrong token, wrong
 * bearer), read-through.test.ts (Cookie/Authorization not sent upstream on a search) and
 * operations.test.ts (no secret in the logs of ordinary traffic); covers what they do not:
 * credentials in the wrong places and forged source headers over a real socket, Host and
 * X-Forwarded-* spoofing on every kind of answer (fast path included), cache poisoning by a first
 * request that carries them or a user's cookies, paths outside the pages API (no open proxy),
 * size limits, and secrets on the failure paths of the logs.
 */
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { freePort } from '../helpers/free-port.js'
import { BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'

const API = '/api/v1/cms/pages/'
const PURGE_TOKEN = 'purge-token-0123456789'
const REFRESH_TOKEN = 'refresh-token-0123456789'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function shield(options: Parameters<typeof startShield>[0]): Promise<Harness> {
  const h = await startShield(options)
  cleanups.push(() => h.close())
  return h
}

async function listening(h: Harness): Promise<number> {
  await h.app.listen({ port: 0, host: '127.0.0.1' })
  return (h.app.server.address() as { port: number }).port
}

/** One raw request on its own connection; resolves with what came back when the server closed it (bounded: 5 s). */
function raw(port: number, request: string): Promise<{ status: number | undefined; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect({ host: '127.0.0.1', port })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within 5 s to ${JSON.stringify(request.slice(0, 120))}`))
    }, 5000)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('utf8')
      const end = text.indexOf('\r\n\r\n')
      const head = end < 0 ? text : text.slice(0, end)
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]
      resolve({ status: status === undefined ? undefined : Number(status), head, body: end < 0 ? '' : text.slice(end + 4) })
    })
    socket.write(request)
  })
}

/** Polls (bounded: 2 s) until `check` holds. */
async function eventually(check: () => boolean, ms = 2000): Promise<void> {
  const started = Date.now()
  while (!check()) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 200))

describe('PURGE and the webhook refuse credentials in the wrong place', () => {
  it('refuses PURGE over a socket whatever forwarding header claims an allowed source, and refreshes nothing', async () => {
    const h = await shield({ env: { PURGE_ALLOW: '10.0.0.0/8', PURGE_TOKEN, REFRESH_DEBOUNCE: '20ms' }, deps: { autoSync: true } })
    const port = await listening(h)
    h.origin.resetHits()
    const attempts = [
      'X-Forwarded-For: 10.0.0.1',
      'X-Real-IP: 10.0.0.1',
      'Forwarded: for=10.0.0.1',
      `X-Purge-Token: ${PURGE_TOKEN}x`,
      `X-Purge-Token: ${PURGE_TOKEN.toUpperCase()}`,
      `X-Purge-Token: ${PURGE_TOKEN}\r\nX-Purge-Token: ${PURGE_TOKEN}`, // repeated: ambiguous, refused
      `Authorization: Bearer ${PURGE_TOKEN}`,
      'X-Purge-Token: ',
    ]
    for (const header of attempts) {
      const answer = await raw(port, `PURGE ${API}4/ HTTP/1.1\r\nHost: x\r\n${header}\r\nConnection: close\r\n\r\n`)
      expect(answer.status, header).toBe(403)
      expect(JSON.parse(answer.body), header).toEqual({ message: 'PURGE not allowed from this address' })
    }
    const inQuery = await raw(port, `PURGE ${API}4/?token=${PURGE_TOKEN}&X-Purge-Token=${PURGE_TOKEN} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    expect(inQuery.status).toBe(403)
    await settle()
    expect(h.origin.hits.total).toBe(0)
    // The same socket with the token where it belongs does refresh: the check above can see one.
    const allowed = await raw(port, `PURGE ${API}4/ HTTP/1.1\r\nHost: x\r\nX-Purge-Token: ${PURGE_TOKEN}\r\nConnection: close\r\n\r\n`)
    expect(allowed.status).toBe(200)
    await eventually(() => h.origin.hits.total > 0)
  })

  it('refuses the webhook for a token anywhere but a bearer Authorization, and refreshes nothing', async () => {
    const h = await shield({ env: { REFRESH_TOKEN, PURGE_TOKEN, REFRESH_DEBOUNCE: '20ms' }, deps: { autoSync: true } })
    h.origin.resetHits()
    const attempts: Array<{ url?: string; headers: Record<string, string> }> = [
      { headers: { 'x-purge-token': REFRESH_TOKEN } },
      { headers: { authorization: `Basic ${Buffer.from(`user:${REFRESH_TOKEN}`).toString('base64')}` } },
      { headers: { authorization: REFRESH_TOKEN } },
      { headers: { authorization: `Bearer ${REFRESH_TOKEN} ${REFRESH_TOKEN}` } },
      { headers: { authorization: `Bearer ${PURGE_TOKEN}` } }, // the other secret is not this one
      { headers: { authorization: 'Bearer' } },
      { headers: { cookie: `token=${REFRESH_TOKEN}` } },
      { url: `/-/refresh?token=${REFRESH_TOKEN}`, headers: {} },
    ]
    for (const attempt of attempts) {
      const response = await h.app.inject({ method: 'POST', url: attempt.url ?? '/-/refresh', headers: attempt.headers, payload: { all: true } })
      expect(response.statusCode, JSON.stringify(attempt)).toBe(401)
      expect(response.headers['www-authenticate']).toBe('Bearer')
    }
    await settle()
    expect(h.origin.hits.total).toBe(0)
  })
})

describe('Host and X-Forwarded-* never reach a body, a header or a cache entry', () => {
  const SPOOF = {
    host: 'evil.example',
    'x-forwarded-host': 'evil-forwarded.example',
    'x-forwarded-proto': 'gopher',
    'x-forwarded-for': '6.6.6.6',
    'x-forwarded-port': '6666',
    forwarded: 'for=6.6.6.6;host=evil-forwarded.example;proto=gopher',
  }
  const EVIL = /evil|gopher|6\.6\.6\.6|6666/

  it('answers with the same bytes and ETag as a plain request, first or second, on every kind of answer', async () => {
    const h = await shield({})
    const page = h.origin.pages()[5]!
    const targets = [
      `${API}?limit=3`, // index list
      `${API}${page.id}/`, // index detail
      `${API}?search=spoof-1`, // read-through, spoofed first (cold key)
      `${API}${page.id}/?fields=_,id&order=spoof-2`, // read-through detail, spoofed first
      `${API}find/?id=${page.id}`, // find 302
      `${API}find/?html_path=/spoof-3/`, // find read-through
      `${API}?limit=abc`, // Wagtail 400
      `${API}999999/`, // 404
    ]
    for (const target of targets) {
      const spoofed = await h.get(target, SPOOF)
      const plain = await h.get(target)
      expect(spoofed.status, target).toBe(plain.status)
      expect(spoofed.body, target).toBe(plain.body)
      expect(spoofed.headers['etag'], target).toBe(plain.headers['etag'])
      expect(spoofed.headers['location'], target).toBe(plain.headers['location'])
      const { 'x-request-id': _id, date: _date, age: _age, 'cache-status': _status, ...headers } = spoofed.headers
      expect(JSON.stringify(headers), target).not.toMatch(EVIL)
      expect(spoofed.body, target).not.toMatch(EVIL)
      if (plain.headers['location'] !== undefined) expect(String(plain.headers['location']).startsWith(`${BASE_URL}${API}`)).toBe(true)
    }
    // Every detail_url points at BASE_URL.
    const detail = JSON.parse((await h.get(`${API}${page.id}/`, SPOOF)).body) as { meta: { detail_url: string } }
    expect(detail.meta.detail_url).toBe(`${BASE_URL}${API}${page.id}/`)
    // Nothing of it went to the CMS either: its own Host, no forwarding headers, one request per key.
    const cmsHost = new URL(h.origin.url).host
    for (const request of h.origin.requests) {
      expect(request.headers['host']).toBe(cmsHost)
      expect(JSON.stringify(request.headers)).not.toMatch(EVIL)
    }
    const spoofedKeys = h.origin.requests.filter((request) => /spoof-/.test(request.url))
    expect(spoofedKeys).toHaveLength(3)
  })

  it('does the same over a socket, where the fast path answers cached reads before Fastify', async () => {
    const h = await shield({})
    const port = await listening(h)
    const plainRequest = (target: string) => `GET ${target} HTTP/1.1\r\nHost: shield.example\r\nConnection: close\r\n\r\n`
    const spoofedRequest = (target: string) =>
      `GET ${target} HTTP/1.1\r\nHost: evil.example\r\nX-Forwarded-Host: evil-forwarded.example\r\nX-Forwarded-Proto: gopher\r\nConnection: close\r\n\r\n`
    for (const target of [`${API}?limit=2`, `${API}${h.origin.pages()[3]!.id}/`, `${API}?search=socket-spoof`]) {
      const spoofed = await raw(port, spoofedRequest(target))
      const plain = await raw(port, plainRequest(target))
      expect(spoofed.status, target).toBe(200)
      expect(spoofed.body, target).toBe(plain.body)
      expect(/etag: (.*)/i.exec(spoofed.head)?.[1], target).toBe(/etag: (.*)/i.exec(plain.head)?.[1])
      expect(spoofed.head + spoofed.body, target).not.toMatch(EVIL)
    }
    expect(h.app.shield.fastPathAnswered()).toBeGreaterThan(0)
  })
})

describe('Cookie and Authorization stay with their reader', () => {
  it('a read-through first asked with a user\'s credentials is stored without them and is the same for everyone', async () => {
    const h = await shield({})
    h.origin.resetHits()
    const page = h.origin.pages()[4]!
    const credentials = { cookie: 'sessionid=alice-session; csrftoken=alice-csrf', authorization: 'Basic YWxpY2U6c2VjcmV0' }
    for (const target of [`${API}?search=cookie-first`, `${API}${page.id}/?fields=title(x),-title`, `${API}find/?html_path=/cookie-first/`]) {
      const withCredentials = await h.get(target, credentials)
      const anonymous = await h.get(target)
      expect(withCredentials.status, target).toBe(anonymous.status)
      expect(withCredentials.body, target).toBe(anonymous.body)
      expect(withCredentials.headers['etag'], target).toBe(anonymous.headers['etag'])
      expect(withCredentials.headers['set-cookie'], target).toBeUndefined()
      expect(String(withCredentials.headers['vary']), target).toBe('Accept')
    }
    expect(h.origin.requests).toHaveLength(3)
    for (const request of h.origin.requests) {
      expect(request.headers['cookie']).toBeUndefined()
      expect(request.headers['authorization']).toBeUndefined()
    }
  })
})

describe('no open proxy: nothing outside the pages API reaches the CMS', () => {
  it('answers other paths, dot segments, encoded slashes, absolute-form targets and CONNECT with a 4xx or a closed connection', async () => {
    const h = await shield({ env: { PURGE_ALLOW: 'none' } })
    const port = await listening(h)
    h.origin.resetHits()
    const targets = [
      '/admin/', '/admin/login/?next=/', '/api/v1/cms/images/', '/api/v1/cms/documents/', '/api/v2/pages/', '/api/v1/cms/',
      `${API}../../admin/`, `${API}%2e%2e/%2e%2e/admin/`, `${API}..%2f..%2fadmin/`, `${API}4/../../../admin/`, '/%2e%2e/admin/',
      `${API}4/extra/`, '/django-admin/', '//evil.example/', 'http://evil.example/', 'http://evil.example/admin/',
      `http://127.0.0.1:${new URL(h.origin.url).port}/admin/`,
    ]
    for (const target of targets) {
      for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
        const answer = await raw(port, `${method} ${target} HTTP/1.1\r\nHost: shield.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
        expect(answer.status, `${method} ${target}`).toBeGreaterThanOrEqual(400)
        expect(answer.status, `${method} ${target}`).toBeLessThan(500)
      }
    }
    // CONNECT and Upgrade are never tunnelled: a 405 in the API's envelope, and the socket closes.
    const tunnel = await raw(port, 'CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n')
    expect(tunnel.status).toBe(405)
    expect(JSON.parse(tunnel.body)).toEqual({ message: expect.stringMatching(/^method not allowed/) })
    const upgrade = await raw(port, `GET ${API} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`)
    expect(upgrade.status).toBe(405)
    await settle()
    expect(h.origin.hits.total).toBe(0)
    // An absolute-form target for the API itself is answered from the snapshot or the CMS only.
    const absolute = await raw(port, `GET http://evil.example${API}?search=absolute HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)
    expect(absolute.status).toBeLessThan(500)
    for (const request of h.origin.requests) {
      expect(request.url.startsWith(API)).toBe(true)
      expect(request.headers['host']).toBe(new URL(h.origin.url).host)
    }
  })

  it('answers 431 to oversize headers and a 4xx to an oversize URL, without asking the CMS', async () => {
    const h = await shield({})
    const port = await listening(h)
    h.origin.resetHits()
    const headers = await raw(port, `GET ${API} HTTP/1.1\r\nHost: x\r\nCookie: ${'c'.repeat(40_000)}\r\nConnection: close\r\n\r\n`)
    expect(headers.status).toBe(431)
    expect(headers.head).toMatch(/\r\ncontent-type: application\/json\r\n/i)
    expect(JSON.parse(headers.body)).toEqual({ message: 'request header fields too large' })
    const many = await raw(port, `GET ${API} HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${i}`).join('\r\n')}\r\nConnection: close\r\n\r\n`)
    expect(many.status).toBe(431)
    const url = await raw(port, `GET ${API}?search=${'u'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    expect(url.status).toBeGreaterThanOrEqual(400)
    expect(url.status).toBeLessThan(500)
    expect(h.origin.hits.total).toBe(0)
  })
})

describe('logs on the failure paths', () => {
  it('never carry a token, the Redis password, or a client\'s credentials while Redis and the CMS are down', async () => {
    let text = ''
    const redisPassword = 'redis-pass-9876543210'
    const unreachableRedis = `redis://:${redisPassword}@127.0.0.1:${await freePort()}`
    const h = await shield({
      env: { LOG_LEVEL: 'trace', PURGE_TOKEN, REFRESH_TOKEN, REDIS_URL: unreachableRedis, PURGE_ALLOW: 'none' },
      deps: { logger: undefined, logStream: { write: (line: string) => void (text += line) } },
    })
    const port = await listening(h)
    h.origin.setFault(() => ({ type: 'status', status: 503 }))
    const client = { cookie: 'sessionid=client-cookie-777', authorization: 'Basic Y2xpZW50LWF1dGgtNzc3' }
    // A read-through that fails upstream (logged with its error), with the client's credentials.
    expect((await h.get(`${API}?search=down`, client)).status).toBe(502)
    await h.app.inject({ method: 'PURGE', url: `${API}3/`, headers: { 'x-purge-token': 'client-token-777', ...client } })
    await h.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: 'Bearer client-bearer-777' }, payload: { all: true } })
    // A request Node cannot parse, with a credential in it.
    await raw(port, `GET ${API} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic client-raw-777\r\nX-Bad: a\u0001b\r\nConnection: close\r\n\r\n`)
    await h.app.shield.sync.syncNow()
    expect(text).toContain('"msg":"request"')
    for (const secret of [PURGE_TOKEN, REFRESH_TOKEN, redisPassword, 'client-cookie-777', 'Y2xpZW50LWF1dGgtNzc3', 'client-token-777', 'client-bearer-777', 'client-raw-777']) {
      expect(text).not.toContain(secret)
    }
  })
})
