/**
 * A stand-in for Varnish with the xkey vmod, as cms-shield purges it (docs/cdn-purging.md): an
 * HTTP server on 127.0.0.1 that answers 200 to every `PURGE` and remembers when each arrived and
 * which keys its `xkey-purge` header named.
 * @module
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'

export interface ReceivedPurge {
  /** `performance.now()` of the harness when the request's headers arrived. */
  at: number
  keys: string[]
}

export interface VarnishRecorder {
  url: string
  readonly purges: ReceivedPurge[]
  stop(): Promise<void>
}

export async function startVarnishRecorder(): Promise<VarnishRecorder> {
  const purges: ReceivedPurge[] = []
  const server = createServer((request, response) => {
    const at = performance.now()
    if (request.method === 'PURGE') {
      const header = request.headers['xkey-purge']
      const raw = Array.isArray(header) ? header.join(' ') : (header ?? '')
      purges.push({ at, keys: raw.split(/\s+/).filter((key) => key !== '') })
    }
    request.resume()
    response.writeHead(request.method === 'PURGE' ? 200 : 405, { 'content-length': '0' }).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    purges,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
