/**
 * A stand-in for Varnish that only listens: a tiny HTTP server on 127.0.0.1:0 that answers every
 * request 200 and records it (method, path, the `xkey-purge` / `xkey-softpurge` header, when), so
 * a test can see which purges cms-shield sent, when, and how many.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'

export interface RecordedPurge {
  readonly method: string
  readonly url: string
  /** The keys of `xkey-purge` (or `xkey-softpurge`), split on spaces. */
  readonly keys: readonly string[]
  readonly soft: boolean
  /** `Date.now()` when the request arrived. */
  readonly at: number
}

export interface PurgeRecorder {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly purges: readonly RecordedPurge[]
  /** The purges naming `key`. */
  naming(key: string): RecordedPurge[]
  close(): Promise<void>
}

export async function startPurgeRecorder(): Promise<PurgeRecorder> {
  const purges: RecordedPurge[] = []
  const server = createServer((request, response) => {
    const hard = request.headers['xkey-purge']
    const soft = request.headers['xkey-softpurge']
    const header = String(hard ?? soft ?? '')
    purges.push({
      method: request.method ?? '',
      url: request.url ?? '',
      keys: header.split(' ').filter((key) => key !== ''),
      soft: hard === undefined && soft !== undefined,
      at: Date.now(),
    })
    request.resume()
    response.writeHead(200, { 'content-type': 'text/plain' }).end('purged\n')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('purge recorder: no port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    purges,
    naming: (key) => purges.filter((purge) => purge.keys.includes(key)),
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close').catch(() => undefined)
    },
  }
}
