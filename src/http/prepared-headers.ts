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
 * headers into the block (unchanged in shape since Node 0.x). Where it is missing, or of another
 * shape, {@link PREPARED_HEADERS_SUPPORTED} is false, the server keeps Node's `ServerResponse`
 * and the fast path writes full header lists as before.
 * @module
 */
import { ServerResponse, validateHeaderName, validateHeaderValue, type IncomingMessage } from 'node:http'

type StoreHeader = (this: ServerResponse, firstLine: string, headers: unknown) => void

const storeHeader = (ServerResponse.prototype as unknown as { _storeHeader?: unknown })._storeHeader as StoreHeader | undefined

/** Whether this Node builds header blocks the way {@link PreparedServerResponse} relies on. */
export const PREPARED_HEADERS_SUPPORTED = typeof storeHeader === 'function' && storeHeader.length === 2

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
