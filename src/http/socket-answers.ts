/**
 * Answers written straight to a socket, for requests no route can take: what Node's HTTP parser
 * refuses (a malformed request, headers over the limit, a timeout) and CONNECT/Upgrade requests,
 * which Node hands over as raw sockets and would otherwise drop without a word. Each gets a 4xx
 * in the same `{"message": …}` envelope as every other error, and the connection is closed.
 * @module
 */
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { proxyFailureAnswer } from './answers.js'

/** The bytes of an HTTP/1.1 answer with `message`, closing the connection. */
export function socketAnswer(status: number, message: string, extraHeaders: Readonly<Record<string, string>> = {}): Buffer {
  const answer = proxyFailureAnswer(status, message)
  const headers = { ...answer.headers, ...extraHeaders, 'content-length': String(answer.body.length), connection: 'close' }
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`
  return Buffer.concat([Buffer.from(head, 'latin1'), answer.body])
}

/** Node's parser error codes → the status a client should see (RFC 9110 §15.5, RFC 6585 §5). */
export function clientErrorStatus(code: string | undefined): number {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return 431
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408
    default:
      return 400
  }
}

/** Writes `bytes` if the socket can still take them, then closes it. */
export function endSocket(socket: Duplex, bytes: Buffer): void {
  if (socket.writable) socket.end(bytes)
  else socket.destroy()
}

const METHOD_NOT_ALLOWED = socketAnswer(405, 'method not allowed: cms-shield answers GET, HEAD and OPTIONS on the pages API', { allow: 'GET, HEAD, OPTIONS' })

/** CONNECT (a tunnel) and Upgrade (WebSocket, h2c): cms-shield is no tunnel and no open proxy. */
export function refuseTunnel(socket: Duplex): void {
  endSocket(socket, METHOD_NOT_ALLOWED)
}
