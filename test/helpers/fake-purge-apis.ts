/**
 * Fakes of the purge APIs cms-shield talks to, as real HTTP servers on 127.0.0.1:0: Fastly's
 * batch surrogate-key purge, Cloudflare's purge_cache and a Varnish that records PURGEs. Each checks
 * the request's shape and credentials the way docs/cdn-purging.md says the real one does, records
 * what it accepted, and can be told to answer 429 (with Retry-After) or 500 a number of times.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedPurge {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage['headers']
  /** The keys the request named (Fastly's `surrogate_keys`, Cloudflare's `tags`, Varnish's xkey header). */
  readonly keys: readonly string[]
  /** Varnish: which header carried them; Fastly: `Fastly-Soft-Purge` given. */
  readonly soft: boolean
}

interface Fault {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export interface FakePurgeApi {
  /** Base URL (`http://127.0.0.1:<port>`). */
  readonly url: string
  /** Purges accepted (2xx), in order. */
  readonly purges: RecordedPurge[]
  /** Every request that arrived, refused or not. */
  readonly requests: RecordedPurge[]
  /** The next `times` requests are answered `status` (429 or 5xx, or a 4xx), with `headers` and `body`. */
  failNext(times: number, status: number, headers?: Record<string, string>, body?: string): void
  /** The keys of every accepted purge, in order, flattened. */
  purgedKeys(): string[]
  reset(): void
  close(): Promise<void>
}

type Handler = (req: IncomingMessage, body: string) => { status: number; headers?: Record<string, string>; body: string; record?: Omit<RecordedPurge, 'method' | 'path' | 'headers'> }

async function startFake(handle: Handler): Promise<FakePurgeApi> {
  const purges: RecordedPurge[] = []
  const requests: RecordedPurge[] = []
  const faults: Fault[] = []
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const answer = handle(req, text)
      const base = { method: req.method ?? '', path: req.url ?? '', headers: req.headers }
      const record = { ...base, keys: answer.record?.keys ?? [], soft: answer.record?.soft ?? false }
      requests.push(record)
      const fault = faults.shift()
      if (fault) {
        res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers }).end(fault.body)
        return
      }
      if (answer.status >= 200 && answer.status < 300 && answer.record) purges.push(record)
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    purges,
    requests,
    failNext(times, status, headers = {}, body = '') {
      for (let i = 0; i < times; i++) faults.push({ status, headers, body })
    },
    purgedKeys: () => purges.flatMap((purge) => purge.keys),
    reset() {
      purges.length = 0
      requests.length = 0
      faults.length = 0
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function isKeyList(value: unknown, max: number): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.length <= max && value.every((key) => typeof key === 'string' && key !== '')
}

/** Fastly's `POST /service/{id}/purge`: `Fastly-Key`, JSON `surrogate_keys` (1 to 256), optional `Fastly-Soft-Purge: 1`. */
export function startFakeFastly(options: { serviceId: string; token: string }): Promise<FakePurgeApi> {
  return startFake((req, text) => {
    if (req.method !== 'POST' || req.url !== `/service/${options.serviceId}/purge`) return { status: 404, body: '{"msg":"Record not found"}' }
    if (req.headers['fastly-key'] !== options.token) return { status: 401, body: '{"msg":"Provided credentials are missing or invalid"}' }
    const body = parseJson(text) as { surrogate_keys?: unknown } | undefined
    if (!String(req.headers['content-type']).startsWith('application/json') || !isKeyList(body?.surrogate_keys, 256)) {
      return { status: 400, body: '{"msg":"Bad request","detail":"surrogate_keys: 1 to 256 keys"}' }
    }
    const keys = body.surrogate_keys
    const ids = Object.fromEntries(keys.map((key, i) => [key, `purge-${i}`]))
    return { status: 200, body: JSON.stringify(ids), record: { keys, soft: req.headers['fastly-soft-purge'] === '1' } }
  })
}

/** Cloudflare's `POST /zones/{id}/purge_cache`: bearer token, JSON `tags` (1 to 100), v4 envelope answers. */
export function startFakeCloudflare(options: { zoneId: string; token: string }): Promise<FakePurgeApi> {
  const refusal = (status: number, code: number, message: string) =>
    ({ status, body: JSON.stringify({ success: false, errors: [{ code, message }], messages: [], result: null }) })
  return startFake((req, text) => {
    if (req.method !== 'POST' || req.url !== `/zones/${options.zoneId}/purge_cache`) return refusal(404, 7003, 'Could not route to the zone')
    if (req.headers['authorization'] !== `Bearer ${options.token}`) return refusal(403, 10000, 'Authentication error')
    const body = parseJson(text) as { tags?: unknown } | undefined
    if (!String(req.headers['content-type']).startsWith('application/json') || !isKeyList(body?.tags, 100)) {
      return refusal(400, 1024, 'tags: 1 to 100 tags')
    }
    return {
      status: 200,
      body: JSON.stringify({ success: true, errors: [], messages: [], result: { id: 'purge-id' } }),
      record: { keys: body.tags, soft: false },
    }
  })
}

/**
 * A Varnish with xkey, as far as purging goes: `PURGE /` with `xkey-purge` or `xkey-softpurge`.
 * `onPurge` runs as each PURGE arrives, before it is answered (to look at what is stored then).
 */
export function startVarnishRecorder(options: { onPurge?: () => void } = {}): Promise<FakePurgeApi> {
  return startFake((req) => {
    if (req.method !== 'PURGE') return { status: 405, body: '' }
    options.onPurge?.()
    const hard = req.headers['xkey-purge']
    const soft = req.headers['xkey-softpurge']
    const value = typeof hard === 'string' ? hard : typeof soft === 'string' ? soft : undefined
    if (req.url !== '/' || value === undefined || value.trim() === '') return { status: 400, body: '' }
    const keys = value.trim().split(/\s+/)
    return { status: 200, headers: { 'x-purged': String(keys.length) }, body: '', record: { keys, soft: typeof soft === 'string' } }
  })
}
