/**
 * Baseline: a bare `node:http` server that answers every request with one precomputed Buffer and the
 * header set cms-shield sent with it (see `lib/canned-response.ts`); a request whose `If-None-Match`
 * equals the ETag gets a 304, as a caching origin would. Nothing else: no routing, no parsing of the
 * query, no logging. Loopback only, port picked by the OS.
 *
 * With `BENCH_HOLD_MS` set, it is the cold-key row's ideal instead: a zero-cost proxy in front of an
 * origin that takes that long. The first request to arrive while none is held starts the clock;
 * when it runs out, every request held by then is answered at once, as one coalesced CMS answer
 * would release its waiters.
 *
 *   BENCH_BODY_FILE=body.json BENCH_HEADERS_FILE=headers.json node --import tsx bench/baseline-node.ts
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { serveCanned } from './lib/canned-response.js'

const holdMs = Number(process.env['BENCH_HOLD_MS'] ?? '0')
if (!Number.isInteger(holdMs) || holdMs < 0) throw new Error(`baseline-node: BENCH_HOLD_MS=${process.env['BENCH_HOLD_MS']} is not a non-negative integer`)

await serveCanned('baseline-node', async (holder) => {
  let held: Array<() => void> = []
  const server = createServer((req, res) => {
    if (holdMs > 0) {
      if (held.length === 0) {
        setTimeout(() => {
          const release = held
          held = []
          for (const answer of release) answer()
        }, holdMs)
      }
      held.push(() => answer(req, res))
      return
    }
    answer(req, res)
  })
  function answer(req: IncomingMessage, res: ServerResponse): void {
    const response = holder.current
    if (response.etag !== undefined && req.headers['if-none-match'] === response.etag) {
      res.writeHead(304, response.notModifiedHeaders)
      res.end()
      return
    }
    res.writeHead(200, response.headers)
    res.end(response.body)
  }
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
