/**
 * Sends one request with its target exactly as written (`fetch` would re-encode odd query
 * strings, and those are part of what is verified) and reads the whole answer, within a timeout.
 * @module
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import type { Answer, Exchange, Method } from './types.js'

export interface Endpoint {
  /** Scheme, host and any path prefix, without a trailing slash: `https://cms.example.com`. */
  readonly base: string
  readonly send: (method: Method, target: string, headers: Record<string, string>) => Promise<Exchange>
  readonly close: () => void
}

function headersOf(res: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {}
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!.toLowerCase()
    const value = res.rawHeaders[i + 1]!
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  }
  return headers
}

/** A keep-alive client for one server; `timeoutMs` bounds each request from start to last byte. */
export function endpoint(base: string, timeoutMs: number, maxSockets = 16): Endpoint {
  const url = new URL(base)
  const secure = url.protocol === 'https:'
  if (!secure && url.protocol !== 'http:') throw new Error(`not an http(s) URL: ${base}`)
  const agent = secure ? new HttpsAgent({ keepAlive: true, maxSockets }) : new HttpAgent({ keepAlive: true, maxSockets })
  const prefix = url.pathname.replace(/\/+$/, '')
  const send = (method: Method, target: string, headers: Record<string, string>): Promise<Exchange> =>
    new Promise((resolve) => {
      const options = {
        method,
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port === '' ? undefined : url.port,
        path: prefix + target,
        headers,
        agent,
        signal: AbortSignal.timeout(timeoutMs),
      }
      let settled = false
      const done = (exchange: Exchange): void => {
        if (settled) return
        settled = true
        resolve(exchange)
      }
      const req = (secure ? httpsRequest : httpRequest)(options, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const answer: Answer = { status: res.statusCode ?? 0, headers: headersOf(res), body: Buffer.concat(chunks) }
          done({ ok: true, answer })
        })
        res.on('error', (error) => done({ ok: false, error: describe(error, timeoutMs) }))
        // After 'end' this is a no-op; before it, the answer was cut short.
        res.on('close', () => done({ ok: false, error: 'the connection closed mid-answer' }))
      })
      req.on('error', (error) => done({ ok: false, error: describe(error, timeoutMs) }))
      req.end()
    })
  return { base: url.origin + prefix, send, close: () => agent.destroy() }
}

function describe(error: Error, timeoutMs: number): string {
  if (error.name === 'AbortError' || error.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`
  return error.message
}
