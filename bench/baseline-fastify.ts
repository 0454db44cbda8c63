/**
 * Baseline: a bare Fastify 5 app (no logger, no plugins) with one catch-all GET route that answers
 * with one precomputed Buffer and the header set cms-shield sent with it (see
 * `lib/canned-response.ts`); a request whose `If-None-Match` equals the ETag gets a 304. It pays what
 * any Fastify app pays (routing, query parsing, the request and reply objects, hooks), and nothing of
 * cms-shield's own work. Loopback only, port picked by the OS.
 *
 *   BENCH_BODY_FILE=body.json BENCH_HEADERS_FILE=headers.json node --import tsx bench/baseline-fastify.ts
 * @module
 */
import Fastify from 'fastify'
import { serveCanned } from './lib/canned-response.js'

await serveCanned('baseline-fastify', async (holder) => {
  const app = Fastify({ logger: false })
  app.get('/*', (request, reply) => {
    const response = holder.current
    if (response.etag !== undefined && request.headers['if-none-match'] === response.etag) {
      reply.code(304).headers(response.notModifiedHeaders).send()
      return reply
    }
    reply.code(200).headers(response.headers).send(response.body)
    return reply
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('baseline-fastify: no TCP address')
  return { port: address.port, close: () => app.close() }
})
