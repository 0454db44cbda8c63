/**
 * The fast path answers cached reads before Fastify routes them; it must answer exactly as the
 * Fastify path does. Two instances over real sockets, one with FAST_PATH=false, get the same
 * requests: status, every header (but the per-request ones) and body bytes must match, and the
 * fast instance must really have answered them itself.
 */
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

async function send(which: 'fast' | 'slow', method: 'GET' | 'HEAD', path: string, headers: Record<string, string>) {
  const response = await request(base[which] + path, { method, headers })
  const body = Buffer.from(await response.body.arrayBuffer())
  const kept = Object.entries(response.headers).filter(([name]) => !PER_REQUEST.has(name))
  return { status: response.statusCode, headers: kept, body: body.toString('latin1'), requestId: response.headers['x-request-id'] }
}

describe('the fast path', () => {
  it('answers every kind of API read exactly as Fastify does', async () => {
    const snapshot = fast.app.shield.sync.current!
    const root = snapshot.rootId
    const someId = snapshot.pages[7]!.id
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
          expect(fastAnswer.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
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
})
