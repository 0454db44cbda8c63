import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { isProxyError } from '../errors.js'
import { createHttpClient, type HttpClient } from './http-client.js'

// The client's own undici Pool against real sockets: what MockAgent cannot show
// (refused connections, a body that trickles in chunks, a slow-loris CMS).

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function client(baseUrl: string, overrides: { timeoutMs?: number; maxBodyBytes?: number } = {}): HttpClient {
  const http = createHttpClient({
    baseUrl, connections: 2, timeoutMs: overrides.timeoutMs ?? 2_000, retries: 0, maxBodyBytes: overrides.maxBodyBytes ?? 1_024,
  })
  cleanups.push(() => http.close())
  return http
}

describe('createHttpClient over its own Pool', () => {
  it('GETs below the base URL path prefix', async () => {
    const base = await serve((request, response) => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ url: request.url, cookie: request.headers.cookie ?? null }))
    })

    const response = await client(`${base}/prefix/`).get('/api/v1/cms/pages/?limit=1')

    expect(JSON.parse(response.text())).toEqual({ url: '/prefix/api/v1/cms/pages/?limit=1', cookie: null })
  })

  it('maps a refused connection to UPSTREAM_UNAVAILABLE', async () => {
    const base = await serve(() => {})
    await cleanups.pop()?.() // close it again: nothing listens on that port now

    const error = await client(base).get('/').catch((caught: unknown) => caught)

    expect(isProxyError(error, 'UPSTREAM_UNAVAILABLE')).toBe(true)
  })

  it('cuts off a chunked body that grows past the cap', async () => {
    const base = await serve((_request, response) => {
      response.write('x'.repeat(600))
      setTimeout(() => response.end('x'.repeat(600)), 20)
    })

    const error = await client(base).get('/').catch((caught: unknown) => caught)

    expect(isProxyError(error, 'UPSTREAM_BODY_TOO_LARGE')).toBe(true)
  })

  it('times out a CMS that trickles its body, though no single gap is long', async () => {
    const base = await serve((_request, response) => {
      const timer = setInterval(() => response.write('x'), 20)
      response.on('close', () => clearInterval(timer))
    })

    const started = Date.now()
    const error = await client(base, { timeoutMs: 150, maxBodyBytes: 1_000_000 }).get('/').catch((caught: unknown) => caught)

    expect(isProxyError(error, 'UPSTREAM_TIMEOUT')).toBe(true)
    expect(Date.now() - started).toBeLessThan(1_500)
  })

  it('closes idempotently', async () => {
    const http = client(await serve((_request, response) => response.end()))
    await http.close()
    await http.close()
  })
})
