/**
 * Sends one request with its target exactly as written (`fetch` would re-encode odd query
 * strings, and those are part of what is verified) and reads the whole answer, within a timeout.
 * @module
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
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
  const sendHead = (target: string, headers: Record<string, string>): Promise<Exchange> =>
    rawHead(url, prefix + target, headers, timeoutMs)
  return {
    base: url.origin + prefix,
    send: (method, target, headers) => (method === 'HEAD' ? sendHead(target, headers) : send(method, target, headers)),
    close: () => agent.destroy(),
  }
}

/**
 * HEAD on a connection of its own, read up to the end of the headers: some servers (gunicorn 20.1
 * in front of Django 5, measured on the lab's Wagtail 7.3.4) write the GET body after a HEAD's
 * headers, which Node's client refuses as a parse error (`Data after Connection: close`). A HEAD
 * is compared by its status and headers only, so whatever follows them is not read.
 */
function rawHead(url: URL, path: string, headers: Record<string, string>, timeoutMs: number): Promise<Exchange> {
  return new Promise((resolve) => {
    const secure = url.protocol === 'https:'
    const port = Number(url.port || (secure ? 443 : 80))
    const hostname = url.hostname.replace(/^\[|\]$/g, '')
    const lines = [`HEAD ${path} HTTP/1.1`]
    const names = new Set(Object.keys(headers).map((name) => name.toLowerCase()))
    if (!names.has('host')) lines.push(`Host: ${url.host}`)
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
    lines.push('Connection: close', '', '')
    let settled = false
    let socket: Socket | undefined = undefined
    const done = (exchange: Exchange): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket?.destroy()
      resolve(exchange)
    }
    const timer = setTimeout(() => done({ ok: false, error: `no answer within ${timeoutMs} ms` }), timeoutMs)
    const onConnect = (): void => {
      socket!.write(lines.join('\r\n'))
    }
    socket = secure ? tlsConnect({ host: hostname, port, servername: hostname }, onConnect) : netConnect({ host: hostname, port }, onConnect)
    let received = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const end = received.indexOf('\r\n\r\n')
      if (end < 0) {
        if (received.length > 1_000_000) done({ ok: false, error: 'HEAD: no end of the headers within 1 MB' })
        return
      }
      const [statusLine, ...headerLines] = received.toString('latin1', 0, end).split('\r\n')
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')
      if (!match) return done({ ok: false, error: `HEAD: not an HTTP answer: ${JSON.stringify((statusLine ?? '').slice(0, 80))}` })
      const answerHeaders: Record<string, string> = {}
      for (const line of headerLines) {
        const colon = line.indexOf(':')
        if (colon <= 0) continue
        const name = line.slice(0, colon).trim().toLowerCase()
        const value = line.slice(colon + 1).trim()
        answerHeaders[name] = answerHeaders[name] === undefined ? value : `${answerHeaders[name]}, ${value}`
      }
      done({ ok: true, answer: { status: Number(match[1]), headers: answerHeaders, body: Buffer.alloc(0) } })
    })
    socket.on('error', (error) => done({ ok: false, error: error.message }))
    socket.on('close', () => done({ ok: false, error: 'the connection closed before the end of the headers' }))
  })
}

function describe(error: Error, timeoutMs: number): string {
  if (error.name === 'AbortError' || error.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`
  return error.message
}
