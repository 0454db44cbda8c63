/**
 * Header blocks prepared once per answer. `writeHead(status, list)` validates every name and value
 * of the list and concatenates them into the header block again on every request (Node's
 * `_storeHeader`), although a remembered answer's headers never change: at a cached hit's price
 * that was a twentieth of the server's own CPU (docs/performance.md, "Prepared header blocks").
 *
 * So an answer's ordinary headers are validated once, with Node's own public validators, and kept
 * as the text of their header lines; {@link PreparedServerResponse} puts that text right after the
 * status line when Node builds the block. Node still writes, and sees, what frames the message and
 * manages the connection (`Content-Length`, `Connection`, `Date`, `Keep-Alive`, …): those are
 * passed to `writeHead` per request as before, so keep-alive, HEAD, 304 and HTTP/1.0 behave exactly
 * as with a plain `ServerResponse`.
 *
 * `_storeHeader(firstLine, headers)` is Node's internal step that turns the status line and the
 * headers into the block, not a public API: a Node release may rename it, stop calling it or give
 * it another meaning. So this module checks, once when it is loaded, that it still behaves as
 * relied on ({@link checkPreparedHeaders}: a few answers rendered into an in-memory socket both
 * ways must come out byte for byte alike). Where they do not, {@link PREPARED_HEADERS_SUPPORTED}
 * is false, the server keeps Node's `ServerResponse` and the fast path writes full header lists
 * through the public `writeHead`, as it also does with `PRIVATE_APIS=false`.
 * @module
 */
import { IncomingMessage, ServerResponse, validateHeaderName, validateHeaderValue } from 'node:http'
import { Duplex } from 'node:stream'

type StoreHeader = (this: ServerResponse, firstLine: string, headers: unknown) => void

const storeHeader = (ServerResponse.prototype as unknown as { _storeHeader?: unknown })._storeHeader as StoreHeader | undefined

/**
 * Headers Node reacts to while building the block (RFC 9112 §6 message framing, §9 connection
 * management; Node's own `Date`): never part of a prepared block, so Node always sees them.
 */
const NODE_HANDLED = new Set(['connection', 'content-length', 'transfer-encoding', 'date', 'expect', 'trailer', 'keep-alive', 'upgrade'])

export interface PreparedHeaders {
  /** `name: value\r\n` for every ordinary header, validated once. */
  readonly lines: string
  /** Name/value pairs Node must see (`connection: close` while closing): passed to `writeHead`. */
  readonly handled: readonly string[]
}

/**
 * Validates `headers` once (throwing as `writeHead` would) and splits them into prepared lines and
 * the ones Node must handle itself.
 */
export function prepareHeaders(headers: Readonly<Record<string, string>>): PreparedHeaders {
  let lines = ''
  const handled: string[] = []
  for (const [name, value] of Object.entries(headers)) {
    if (NODE_HANDLED.has(name.toLowerCase())) {
      handled.push(name, value)
      continue
    }
    validateHeaderName(name)
    validateHeaderValue(name, value)
    lines += `${name}: ${value}\r\n`
  }
  return { lines, handled }
}

/**
 * A `ServerResponse` that writes {@link preparedLines} after its status line, once. Fastify and
 * every other writer that leaves it unset get Node's behaviour unchanged.
 */
export class PreparedServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The next header block's prepared lines (`prepareHeaders().lines`); consumed when the block is built. */
  preparedLines: string | undefined = undefined

  /** Node's hook, called once by `writeHead` (or the implicit header of `write`/`end`). */
  _storeHeader(firstLine: string, headers: unknown): void {
    const lines = this.preparedLines
    if (lines !== undefined) this.preparedLines = undefined
    storeHeader!.call(this, lines === undefined ? firstLine : firstLine + lines, headers)
  }
}

/** One answer of the self-check: what a request asks and what is written back. */
interface CheckCase {
  readonly method: string
  readonly httpVersion: '1.0' | '1.1'
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** An API answer, its 304, and one that closes the connection on an HTTP/1.0 HEAD: the framing Node decides. */
const CHECK_CASES: readonly CheckCase[] = [
  { method: 'GET', httpVersion: '1.1', status: 200, headers: { 'content-type': 'application/json', vary: 'Accept', etag: '"c1"', 'cache-control': 'public, max-age=60' }, body: '{"id": 3}' },
  { method: 'GET', httpVersion: '1.1', status: 304, headers: { etag: '"c1"', vary: 'Accept' }, body: '' },
  { method: 'HEAD', httpVersion: '1.0', status: 200, headers: { 'content-type': 'application/json', connection: 'close' }, body: '{}' },
]

/**
 * The bytes a response class writes for `each` on an in-memory socket: the public `writeHead` with
 * every header, or, with `prepared`, the fast path's way (prepared lines, Node given the rest).
 */
export function renderCheckCase(Response: typeof ServerResponse, each: CheckCase, prepared: boolean): string {
  const written: Buffer[] = []
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk)
      callback()
    },
  })
  const request = new IncomingMessage(socket as never)
  request.method = each.method
  request.httpVersion = each.httpVersion
  request.httpVersionMajor = 1
  request.httpVersionMinor = each.httpVersion === '1.1' ? 1 : 0
  const response = new Response(request)
  response.sendDate = false
  response.assignSocket(socket as never)
  const length = each.status === 304 ? [] : ['content-length', String(Buffer.byteLength(each.body))]
  if (prepared) {
    const { lines, handled } = prepareHeaders(each.headers)
    ;(response as PreparedServerResponse).preparedLines = lines
    response.writeHead(each.status, [...handled, ...length])
  } else {
    response.writeHead(each.status, [...Object.entries(each.headers).flat(), ...length])
  }
  response.end(each.status === 304 || each.method === 'HEAD' ? undefined : each.body)
  while (socket.writableCorked > 0) socket.uncork()
  socket.destroy()
  return Buffer.concat(written).toString('latin1')
}

/**
 * Whether {@link PreparedServerResponse} writes exactly what Node's own `ServerResponse` writes
 * with every header through `writeHead`, on this Node: each check answer rendered both ways must
 * be the same non-empty bytes. Any error, or a hook Node no longer calls, reads as unsupported.
 */
export function checkPreparedHeaders(Prepared: new (request: IncomingMessage) => PreparedServerResponse = PreparedServerResponse): boolean {
  if (typeof storeHeader !== 'function') return false
  try {
    return CHECK_CASES.every((each) => {
      const plain = renderCheckCase(ServerResponse, each, false)
      const prepared = renderCheckCase(Prepared as unknown as typeof ServerResponse, each, true)
      return plain.startsWith(`HTTP/1.1 ${each.status} `) && plain.includes('\r\n\r\n') && prepared === plain
    })
  } catch {
    return false
  }
}

/**
 * Whether this Node builds header blocks the way {@link PreparedServerResponse} relies on, checked
 * by behaviour once, when this module is loaded (in memory, no I/O).
 */
export const PREPARED_HEADERS_SUPPORTED: boolean = checkPreparedHeaders()
