/**
 * A writer of the serving core (`serve.ts`) on the raw `node:http` request, before Fastify routes
 * it (Fastify's `serverFactory` hands it over), because Fastify's routing, hooks and reply
 * plumbing cost more than the answer itself once the body is a ready Buffer
 * (docs/architecture.md#decisions, "Pre-rendered bytes").
 *
 * It decides nothing about the answer: `serve()` does, for both writers, and a test compares them
 * byte for byte. It only takes what it can write exactly as the Fastify writer would: GET and HEAD
 * under the pages endpoint's path in their plain spelling (no percent-escapes in the path), while the
 * instance is not closing (Fastify then answers new requests with its 503). Everything else goes
 * to Fastify untouched.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AfterAnswer } from './after-answer.js'
import type { HttpAnswer } from './answers.js'
import { prepareHeaders, PreparedServerResponse } from './prepared-headers.js'
import type { Serve, Served } from './serve.js'

export interface FastPathOptions {
  readonly serve: Serve<IncomingMessage>
  /** The pages endpoint's path (`ApiMount.pagesPath`): only URLs under it are tried here. */
  readonly pagesPath: string
  readonly isClosing: () => boolean
  readonly afterAnswer: AfterAnswer
}

/** Returns true when it answered; false leaves the request to Fastify. `answered` counts the first. */
export type FastPath = ((req: IncomingMessage, res: ServerResponse) => boolean) & { readonly answered: number }

/**
 * What `writeHead` takes for one answer, built once per answer (when it is first written, and kept
 * as long as the answer is). With a {@link PreparedServerResponse}, the answer's ordinary headers
 * are one prepared text, `lines` (`prepared-headers.ts`), and `writeHead` gets only what Node must
 * see: `Content-Length`, and `Connection: close` while closing; otherwise every header goes
 * through `writeHead`. `withId` is the same list with `x-request-id` first, its value slot (index
 * 1) filled in just before each `writeHead`, which copies the list into the header block at once,
 * so one array serves every request for that answer; `bare` is for answers that carry no id (hits,
 * with REQUEST_ID_ON_HITS=false).
 */
interface HeaderLists {
  readonly lines: string | undefined
  readonly withId: string[]
  readonly bare: string[]
}
/** By answer, for prepared responses and for plain ones (a server makes only one kind). */
const preparedLists = new WeakMap<HttpAnswer, HeaderLists>()
const plainLists = new WeakMap<HttpAnswer, HeaderLists>()
const REQUEST_ID_SLOT = 1

function headerListsOf(answer: HttpAnswer, prepared: boolean): HeaderLists {
  const known = prepared ? preparedLists : plainLists
  let lists = known.get(answer)
  if (!lists) {
    let lines: string | undefined
    let headers: string[]
    if (prepared) {
      const block = prepareHeaders(answer.headers)
      lines = block.lines
      headers = [...block.handled]
    } else {
      headers = Object.entries(answer.headers).flat()
    }
    // A 304 carries no body and, as Fastify sends it, no Content-Length.
    if (answer.status !== 304) headers.push('content-length', String(answer.body.length))
    lists = { lines, bare: headers, withId: ['x-request-id', '', ...headers] }
    known.set(answer, lists)
  }
  return lists
}

/** A path with a percent-escape: Fastify's writer takes it (the same core decodes it). */
function escaped(url: string): boolean {
  const percent = url.indexOf('%')
  if (percent < 0) return false
  const q = url.indexOf('?')
  return q < 0 || percent < q
}

export function createFastPath(options: FastPathOptions): FastPath {
  const { serve, afterAnswer, pagesPath } = options

  function write(req: IncomingMessage, res: ServerResponse, served: Served, started: number): void {
    const { answer, requestId } = served
    const prepared = res instanceof PreparedServerResponse
    const lists = headerListsOf(answer, prepared)
    if (prepared) res.preparedLines = lists.lines
    const list = requestId === undefined ? lists.bare : lists.withId
    if (requestId !== undefined) list[REQUEST_ID_SLOT] = requestId
    res.writeHead(answer.status, list)
    // An empty Buffer still goes through a write of its own; `end()` sends the header block alone.
    if (answer.body.length === 0) res.end()
    else res.end(answer.body)
    afterAnswer(requestId, req.method!, req.url!, served.labels, performance.now() - started)
  }

  let answered = 0
  const fastPath = (req: IncomingMessage, res: ServerResponse): boolean => {
    const method = req.method
    if (method !== 'GET' && method !== 'HEAD') return false
    const url = req.url!
    if (!url.startsWith(pagesPath) || escaped(url) || options.isClosing()) return false
    const started = performance.now()
    const served = serve(req)
    if (served === undefined) return false
    if (served instanceof Promise) {
      // serve() turns a failing view into an answer; what is left would be a bug in writing.
      served.then((result) => write(req, res, result, started)).catch((error: unknown) => res.destroy(error as Error))
    } else {
      write(req, res, served, started)
    }
    answered++
    return true
  }
  return Object.defineProperty(fastPath, 'answered', { get: () => answered }) as FastPath
}
