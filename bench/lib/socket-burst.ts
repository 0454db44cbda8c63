/**
 * A burst of concurrent GETs over raw keep-alive sockets, for the cold-key row.
 *
 * Why not undici: timing 200 requests sent at once measures the client as much as the server.
 * Against the bare node baseline an undici Pool burst of 200 had a p50 of ~20 ms, almost all of it
 * the harness building and parsing requests on the same two cores. Here a request is one
 * pre-encoded write and an answer is read by splitting on the header end and counting
 * `content-length` bytes, so the floor is the sockets, not the client library.
 * @module
 */
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'

export interface BurstAnswer {
  /** From just before this request's write to the last byte of its answer. */
  ms: number
  status: number
  body: Buffer
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>
}

const HEADER_END = Buffer.from('\r\n\r\n')

/** One keep-alive connection that carries one request at a time. */
class Connection {
  private chunks: Buffer[] = []
  private buffered = 0
  private waiting: { started: number; resolve: (answer: BurstAnswer) => void; reject: (error: Error) => void } | undefined

  constructor(private readonly socket: Socket) {
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('error', (error) => this.fail(error))
    socket.on('close', () => this.fail(new Error('connection closed by the server')))
  }

  send(request: Buffer): Promise<BurstAnswer> {
    if (this.waiting) return Promise.reject(new Error('socket-burst: a request is already in flight on this connection'))
    return new Promise((resolve, reject) => {
      this.waiting = { started: performance.now(), resolve, reject }
      this.socket.write(request)
    })
  }

  close(): void {
    this.socket.destroy()
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.buffered += chunk.length
    const data = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks, this.buffered)
    const headerEnd = data.indexOf(HEADER_END)
    if (headerEnd < 0) return
    const head = data.subarray(0, headerEnd).toString('latin1').split('\r\n')
    const status = Number(head[0]?.split(' ')[1])
    const headers: Record<string, string> = {}
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).toLowerCase()
      const value = line.slice(colon + 1).trim()
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
    }
    const lengthHeader = headers['content-length']
    if (lengthHeader === undefined) return this.fail(new Error('socket-burst: an answer without content-length (chunked answers are not read here)'))
    const bodyStart = headerEnd + HEADER_END.length
    const length = Number(lengthHeader)
    if (data.length < bodyStart + length) {
      this.chunks = [data]
      return
    }
    const waiting = this.waiting
    this.chunks = []
    this.buffered = 0
    this.waiting = undefined
    waiting?.resolve({ ms: performance.now() - waiting.started, status, body: Buffer.from(data.subarray(bodyStart, bodyStart + length)), headers })
  }

  private fail(error: Error): void {
    const waiting = this.waiting
    this.waiting = undefined
    waiting?.reject(error)
  }
}

/** `count` connections to `url`'s host, each opened and used once for `warmPath` before this returns. */
export class SocketClients {
  private constructor(private readonly host: string, private readonly connections: Connection[]) {}

  static async open(url: string, count: number, warmPath: string): Promise<SocketClients> {
    const { hostname, port } = new URL(url)
    const connections = await Promise.all(Array.from({ length: count }, () => new Promise<Connection>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => {
        socket.off('error', reject)
        resolve(new Connection(socket))
      })
      socket.once('error', reject)
    })))
    const clients = new SocketClients(new URL(url).host, connections)
    try {
      await clients.burst(warmPath)
    } catch (error) {
      clients.close()
      throw error
    }
    return clients
  }

  /** One GET of `path` on every connection, all written in the same tick; answers in connection order. */
  burst(path: string, timeoutMs = 30_000): Promise<BurstAnswer[]> {
    const request = Buffer.from(`GET ${path} HTTP/1.1\r\nhost: ${this.host}\r\naccept: application/json\r\n\r\n`, 'latin1')
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`socket-burst: no full answer to ${path} within ${timeoutMs} ms`)), timeoutMs)
    })
    return Promise.race([Promise.all(this.connections.map((connection) => connection.send(request))), timeout]).finally(() => clearTimeout(timer))
  }

  close(): void {
    for (const connection of this.connections) connection.close()
  }
}
