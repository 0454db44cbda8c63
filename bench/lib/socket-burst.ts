/**
 * A burst of concurrent GETs over raw keep-alive sockets, for the cold-key row.
 *
 * Why not undici: timing 200 requests sent at once measures the client as much as the server.
 * Against the bare node baseline an undici Pool burst of 200 had a p50 of ~20 ms, almost all of it
 * the harness building and parsing requests on the same two cores. Here a request is one
 * pre-encoded write, and an answer's time is stamped when its bytes come off the socket, before
 * any parsing: sockets are read with `onread` (no stream, no 'data' event), each read only copies
 * the bytes and notes the time, and the parsing of every answer that arrived in one turn of the
 * event loop waits for `setImmediate`. So the 200th answer's time does not include the parsing of
 * the 199 before it, and the floor is the sockets, not the client.
 * @module
 */
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'

export interface BurstAnswer {
  /** From just before this request's write to the arrival of the last byte of its answer. */
  ms: number
  status: number
  body: Buffer
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>
}

const HEADER_END = Buffer.from('\r\n\r\n')
/** What one read may hand over; answers here are a few KiB. */
const READ_BUFFER_BYTES = 64 * 1024
/** Untimed bursts on a fresh set of connections, so that this client's own code is compiled before anything is timed. */
const WARM_BURSTS = 5

/** Connections with bytes read but not parsed yet, parsed together once the reads of this turn are done. */
const unparsed = new Set<Connection>()
let parseScheduled = false

function parseArrivals(): void {
  parseScheduled = false
  const connections = [...unparsed]
  unparsed.clear()
  for (const connection of connections) connection.parse()
}


/** One keep-alive connection that carries one request at a time. */
class Connection {
  private chunks: Buffer[] = []
  private buffered = 0
  /** When the newest chunk came off the socket. */
  private lastArrival = 0
  private waiting: { started: number; resolve: (answer: BurstAnswer) => void; reject: (error: Error) => void } | undefined
  private socket: Socket | undefined

  static open(host: string, port: number): Promise<Connection> {
    const connection = new Connection()
    return new Promise((resolve, reject) => {
      const socket = connect({
        host,
        port,
        noDelay: true,
        onread: { buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES), callback: (bytes, buffer) => connection.arrived(bytes, buffer) },
      }, () => {
        socket.off('error', reject)
        resolve(connection)
      })
      connection.socket = socket
      socket.once('error', reject)
      socket.on('error', (error) => connection.fail(error))
      socket.on('close', () => connection.fail(new Error('connection closed by the server')))
    })
  }

  send(request: Buffer): Promise<BurstAnswer> {
    if (this.waiting) return Promise.reject(new Error('socket-burst: a request is already in flight on this connection'))
    return new Promise((resolve, reject) => {
      this.waiting = { started: performance.now(), resolve, reject }
      this.socket?.write(request)
    })
  }

  close(): void {
    this.socket?.destroy()
  }

  /** The `onread` callback: the time first, then a copy (the read buffer is reused), nothing else. */
  private arrived(bytes: number, buffer: Uint8Array): boolean {
    this.lastArrival = performance.now()
    this.chunks.push(Buffer.from(buffer.subarray(0, bytes)))
    this.buffered += bytes
    unparsed.add(this)
    if (!parseScheduled) {
      parseScheduled = true
      setImmediate(parseArrivals)
    }
    return true // keep reading
  }

  parse(): void {
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered)
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
    waiting?.resolve({ ms: this.lastArrival - waiting.started, status, body: Buffer.from(data.subarray(bodyStart, bodyStart + length)), headers })
  }

  fail(error: Error): void {
    const waiting = this.waiting
    this.waiting = undefined
    waiting?.reject(error)
  }
}

/** `count` connections to `url`'s host, each opened and used a few times for `warmPath` before this returns. */
export class SocketClients {
  private constructor(private readonly host: string, private readonly connections: Connection[]) {}

  static async open(url: string, count: number, warmPath: string): Promise<SocketClients> {
    const { hostname, port, host } = new URL(url)
    const connections = await Promise.all(Array.from({ length: count }, () => Connection.open(hostname, Number(port))))
    const clients = new SocketClients(host, connections)
    try {
      for (let i = 0; i < WARM_BURSTS; i++) await clients.burst(warmPath)
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
