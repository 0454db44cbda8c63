/**
 * Answers cached reads before Fastify routes them (Fastify's `serverFactory` hands over the raw
 * request), because Fastify's routing, hooks and reply plumbing cost more than the answer itself
 * once the body is a ready Buffer (docs/architecture.md#decisions, "Pre-rendered bytes").
 *
 * It takes only what it can answer exactly as the Fastify path would: GET and HEAD on the three
 * API routes in their plain spelling (no percent-escapes in the path), while a snapshot is loaded,
 * the instance is not shedding load and not closing. It calls the same views and the same
 * conditional-request step (`conditionalAnswer`) as the routes, so bytes, headers and 304s are the
 * same — a test compares both paths for every kind of request. Everything else (PURGE, errors it
 * cannot foresee, encoded paths, other methods) goes to Fastify untouched.
 *
 * Synchronous answers (everything the snapshot answers, errors included) depend only on the
 * snapshot, the URL and `Accept`, so they are remembered per snapshot by exact URL: a repeated
 * read costs one Map lookup. Read-through answers are awaited and written the same way.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RouteName } from '../observability/shield-events.js'
import { createSnapshotMemo } from '../tree/snapshot-memo.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { HttpAnswer } from './answers.js'
import { PAGES_PATH, type PagesRequest, type PagesService } from './pages-service.js'
import { conditionalAnswer } from './routes/pages.js'

export interface FastAnswered {
  readonly reqId: string
  readonly method: string
  readonly url: string
  /** The API route the path names: the fast path takes no other. */
  readonly route: RouteName & ('list' | 'detail' | 'find')
  readonly status: number
  readonly cacheStatus: string | undefined
  readonly durationMs: number
}

export interface FastPathOptions {
  readonly pages: PagesService
  readonly snapshot: () => Snapshot | undefined
  /** Shedding load: Fastify's path answers (under-pressure runs there). */
  readonly isUnderPressure: () => boolean
  readonly isClosing: () => boolean
  readonly requestId: (header: string | string[] | undefined) => string
  /** The client's address, for its share of the CMS budget (read only on a read-through miss). */
  readonly clientOf?: (req: IncomingMessage) => string | undefined
  /** After each answer: the request line and the metrics event, as Fastify's onResponse would. */
  readonly onAnswered: (answered: FastAnswered) => void
  /** Remembered answers per snapshot; past it, the memory starts over. */
  readonly maxEntries?: number
}

/** Returns true when it answered; false leaves the request to Fastify. `answered` counts the first. */
export type FastPath = ((req: IncomingMessage, res: ServerResponse) => boolean) & { readonly answered: number }

type View = (request: PagesRequest) => HttpAnswer | Promise<HttpAnswer>
type ApiRoute = FastAnswered['route']

/** A synchronous answer remembered for one URL (and `Accept`), with the route its path names. */
interface Remembered {
  readonly answer: HttpAnswer
  readonly route: ApiRoute
}

/**
 * The header list `writeHead` takes, built once per answer: `x-request-id` first, its value slot
 * (index 1) filled in just before each `writeHead`, which copies the list into the header block
 * at once, so one array serves every request for that answer.
 */
const rawHeaders = new WeakMap<HttpAnswer, string[]>()
const REQUEST_ID_SLOT = 1

function headerList(answer: HttpAnswer): string[] {
  let list = rawHeaders.get(answer)
  if (!list) {
    list = ['x-request-id', '']
    for (const [name, value] of Object.entries(answer.headers)) list.push(name, value)
    // A 304 carries no body and, as Fastify sends it, no Content-Length.
    if (answer.status !== 304) list.push('content-length', String(answer.body.length))
    rawHeaders.set(answer, list)
  }
  return list
}

export function createFastPath(options: FastPathOptions): FastPath {
  const maxEntries = options.maxEntries ?? 20_000
  const { pages } = options
  const memo = createSnapshotMemo<Remembered>(maxEntries)

  function viewOf(path: string): { view: View; route: ApiRoute } | undefined {
    if (path.length === PAGES_PATH.length) return { view: pages.list, route: 'list' }
    const rest = path.slice(PAGES_PATH.length)
    if (rest === 'find/') return { view: pages.find, route: 'find' }
    // Django's `[0-9]+/` (leading zeros included); anything else is routed by Fastify.
    for (let i = 0; i < rest.length - 1; i++) {
      const code = rest.charCodeAt(i)
      if (code < 48 || code > 57) return undefined
    }
    if (rest.length < 2 || rest.charCodeAt(rest.length - 1) !== 47) return undefined
    const id = rest.slice(0, -1)
    return { view: (request) => pages.detail(id, request), route: 'detail' }
  }

  function write(req: IncomingMessage, res: ServerResponse, answer: HttpAnswer, route: ApiRoute, started: number): void {
    const reqId = options.requestId(req.headers['x-request-id'])
    const full = conditionalAnswer(answer, req.headers['if-none-match'])
    let headers = headerList(full)
    // As on Fastify's path while closing: a kept-alive connection would hold the exit back.
    if (options.isClosing()) headers = [...headers, 'connection', 'close']
    headers[REQUEST_ID_SLOT] = reqId
    res.writeHead(full.status, headers)
    // An empty Buffer still goes through a write of its own; `end()` sends the header block alone.
    if (full.body.length === 0) res.end()
    else res.end(full.body)
    options.onAnswered({
      reqId,
      method: req.method!,
      url: req.url!,
      route,
      status: full.status,
      cacheStatus: full.headers['cache-status'],
      durationMs: performance.now() - started,
    })
  }

  let answered = 0
  const fastPath = (req: IncomingMessage, res: ServerResponse): boolean => {
    const method = req.method
    if (method !== 'GET' && method !== 'HEAD') return false
    const url = req.url!
    if (!url.startsWith(PAGES_PATH)) return false
    const snapshot = options.snapshot()
    if (!snapshot || options.isClosing() || options.isUnderPressure()) return false

    const started = performance.now()
    const accept = req.headers.accept
    const key = accept === undefined ? url : `${url}\u0000${accept}`
    // Only URLs whose path the fast path takes are remembered, so a hit needs no parsing.
    const remembered = memo.get(snapshot, key)
    if (remembered) {
      write(req, res, remembered.answer, remembered.route, started)
      answered++
      return true
    }

    const q = url.indexOf('?')
    const path = q < 0 ? url : url.slice(0, q)
    if (path.includes('%')) return false
    const route = viewOf(path)
    if (!route) return false
    let answer: HttpAnswer | Promise<HttpAnswer>
    try {
      const clientOf = options.clientOf
      answer = route.view({ rawQuery: q < 0 ? undefined : url.slice(q + 1), accept, ...(clientOf ? { client: () => clientOf(req) } : {}) })
    } catch {
      return false
    }
    if (answer instanceof Promise) {
      answer.then(
        (resolved) => write(req, res, resolved, route.route, started),
        () => {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end('{"message": "internal error"}')
        },
      )
    } else {
      memo.set(key, { answer, route: route.route })
      write(req, res, answer, route.route, started)
    }
    answered++
    return true
  }
  return Object.defineProperty(fastPath, 'answered', { get: () => answered }) as FastPath
}
