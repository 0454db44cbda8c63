/**
 * Baseline: a bare `node:http` server that answers every request with one precomputed Buffer and the
 * header set cms-shield sent with it (see `lib/canned-response.ts`); a request whose `If-None-Match`
 * equals the ETag gets a 304, as a caching origin would. Nothing else: no routing, no parsing of the
 * query, no logging. Loopback only, port picked by the OS.
 *
 *   BENCH_BODY_FILE=body.json BENCH_HEADERS_FILE=headers.json node --import tsx bench/baseline-node.ts
 * @module
 */
import { createServer } from 'node:http'
import { serveCanned } from './lib/canned-response.js'

await serveCanned('baseline-node', async (holder) => {
  const server = createServer((req, res) => {
    const response = holder.current
    if (response.etag !== undefined && req.headers['if-none-match'] === response.etag) {
      res.writeHead(304, response.notModifiedHeaders)
      res.end()
      return
    }
    res.writeHead(200, response.headers)
    res.end(response.body)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('baseline-node: no TCP address')
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
})
