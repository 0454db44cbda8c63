/**
 * What an operator relies on: request ids in every request line, no secret in any log line,
 * `/readyz` telling a down CMS and a down Redis apart from a healthy instance, load shedding that
 * spares the health routes, and a SIGTERM that lets a slow request finish before exiting 0.
 */
import { spawn } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { startRedis } from '../helpers/redis-server.js'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { freePort } from '../helpers/free-port.js'

const cleanups: Array<() => Promise<unknown> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

function capture(): { stream: { write(line: string): void }; lines: () => Array<Record<string, unknown>>; text: () => string } {
  let text = ''
  return {
    stream: { write: (line: string) => void (text += line) },
    lines: () => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>),
    text: () => text,
  }
}

async function shield(options: Parameters<typeof startShield>[0]): Promise<Harness> {
  const h = await startShield(options)
  cleanups.push(() => h.close())
  return h
}

describe('request logs', () => {
  it('carry the request id (the caller\'s when sane, else a new one), route, status and cache outcome', async () => {
    const logs = capture()
    const h = await shield({ env: { LOG_LEVEL: 'info' }, deps: { logger: undefined, logStream: logs.stream } })
    const given = await h.get('/api/v1/cms/pages/?limit=1', { 'x-request-id': 'edge-4f2a.77' })
    expect(given.headers['x-request-id']).toBe('edge-4f2a.77')
    const generated = await h.get('/api/v1/cms/pages/?limit=1', { 'x-request-id': 'bad id\nwith newline' })
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const requests = logs.lines().filter((l) => l['msg'] === 'request')
    expect(requests[0]).toMatchObject({ reqId: 'edge-4f2a.77', route: 'list', statusCode: 200, cache: 'snapshot', method: 'GET' })
    expect(requests[1]).toMatchObject({ reqId: generated.headers['x-request-id'] })
  })

  it('never carry a secret: tokens, Authorization, cookies, the Redis password', async () => {
    const logs = capture()
    const secrets = { purge: 'purge-secret-0123456789', refresh: 'refresh-secret-0123456789', redis: 'redis-pass-0123456789' }
    const redis = await startRedis()
    cleanups.push(() => redis.stop())
    const h = await shield({
      env: {
        LOG_LEVEL: 'trace',
        PURGE_TOKEN: secrets.purge,
        REFRESH_TOKEN: secrets.refresh,
        REDIS_URL: redis.url.replace('redis://', `redis://:${secrets.redis}@`),
        PURGE_ALLOW: 'none',
      },
      deps: { logger: undefined, logStream: logs.stream },
    })
    await h.get('/api/v1/cms/pages/?search=x', { authorization: 'Basic c2VjcmV0OnNlY3JldA==', cookie: 'sessionid=cookie-secret-42' })
    await h.app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/3/', headers: { 'x-purge-token': secrets.purge } })
    await h.app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/3/', headers: { 'x-purge-token': 'wrong-token-0123456789' } })
    await h.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: `Bearer ${secrets.refresh}` }, payload: { ids: [3] } })
    await h.app.inject({ method: 'POST', url: '/-/refresh', headers: { authorization: 'Bearer wrong-bearer-0123456789' }, payload: { ids: [3] } })
    const text = logs.text()
    expect(text).toContain('"msg":"request"')
    for (const secret of [...Object.values(secrets), 'c2VjcmV0OnNlY3JldA==', 'cookie-secret-42', 'wrong-token-0123456789', 'wrong-bearer-0123456789']) {
      expect(text).not.toContain(secret)
    }
  })
})

describe('/readyz', () => {
  it('stays 200 while the CMS is down, and says so', async () => {
    const h = await shield({})
    h.origin.setFault(() => ({ type: 'status', status: 503 }))
    await h.app.shield.sync.syncNow()
    const ready = await h.get('/readyz')
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body)).toMatchObject({ ready: true, cms: 'failing', sync: { consecutiveFailures: 1, role: 'single' } })
    h.origin.setFault(undefined)
    await h.app.shield.sync.syncNow()
    expect(JSON.parse((await h.get('/readyz')).body)).toMatchObject({ cms: 'ok', sync: { consecutiveFailures: 0, lastError: null } })
  })

  it('stays 200 while Redis is down, and says so', async () => {
    const redis = await startRedis()
    cleanups.push(() => redis.stop())
    const h = await shield({ env: { REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT: '100ms' } })
    expect(JSON.parse((await h.get('/readyz')).body)).toMatchObject({ redis: 'up' })
    await redis.kill()
    const deadline = Date.now() + 3000
    let body: { redis?: string } = {}
    while (Date.now() < deadline && body.redis !== 'down') {
      body = JSON.parse((await h.get('/readyz')).body)
      if (body.redis !== 'down') await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(body).toMatchObject({ ready: true, redis: 'down' })
    expect((await h.get('/readyz')).status).toBe(200)
  })
})

describe('load shedding', () => {
  it('answers API requests 503 with Retry-After under memory pressure, and keeps the health routes up', async () => {
    // Any heap is above 1 MB: the instance is "under pressure" from its first sample on.
    const h = await shield({ env: { LOAD_SHED_HEAP_USED: '1mb' } })
    const deadline = Date.now() + 5000
    let shed = await h.get('/api/v1/cms/pages/')
    while (shed.status !== 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      shed = await h.get('/api/v1/cms/pages/')
    }
    expect(shed.status).toBe(503)
    expect(shed.headers['retry-after']).toBe('1')
    expect(JSON.parse(shed.body)).toEqual({ message: 'cms-shield is overloaded; retry shortly' })
    expect((await h.get('/healthz')).status).toBe(200)
    expect((await h.get('/readyz')).status).toBe(200)
    expect(h.origin.hits.total).toBeGreaterThan(0) // the sync ran; shed requests cost the CMS nothing more
  })
})

describe('SIGTERM', () => {
  let origin: FakeWagtail | undefined
  afterEach(async () => {
    await origin?.close()
    origin = undefined
  })

  it('lets a slow request in flight finish, then exits 0', async () => {
    origin = await startFakeWagtail({ pages: generateSite() })
    const port = await freePort()
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { PATH: process.env.PATH ?? '', UPSTREAM_URL: origin.url, BASE_URL: 'https://api.example.com', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT: '10s' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    cleanups.push(() => void child.kill('SIGKILL'))
    let output = ''
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const base = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline && !(await fetch(`${base}/readyz`).then((r) => r.ok, () => false))) await new Promise((resolve) => setTimeout(resolve, 100))

    // A read-through query the CMS takes 1.5 s to answer.
    origin.setLatency(1500)
    const slow = fetch(`${base}/api/v1/cms/pages/?search=slow`).then(async (r) => ({ status: r.status, body: await r.text() }))
    while (!origin.requests.some((r) => r.url.includes('search=slow'))) await new Promise((resolve) => setTimeout(resolve, 10))
    child.kill('SIGTERM')
    const answer = await slow
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body).meta).toBeDefined()
    expect(await exited).toBe(0)
    expect(output).toContain('shutting down')
    expect(output).toContain('shut down')
  })
})

